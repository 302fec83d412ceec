from guardscan.cli import entry

entry()
