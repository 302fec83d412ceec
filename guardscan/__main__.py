from guardscan.cli import main

raise SystemExit(main())
