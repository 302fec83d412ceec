"""graph: one networkx DiGraph joining what the scan found, for export and queries.

    option:--x-backend -> choice:--x-backend=y -> line:sglang/...:12 -> ... -> arch:sm120
                                                     |-> line:... (guard definition)
                                                     '-> kernel:flashinfer.f -> kernel:... -> line:flashinfer/...:40

Node ids are strings with a kind prefix: ``option:FLAG``, ``choice:FLAG=CHOICE``,
``line:PATH:LINE`` (a source line of the scanned package or of the kernel
library), ``arch:NAME`` and ``kernel:QUALNAME``. Nodes and edges carry only
plain attributes (str, int, float, bool, lists of str) so every export format
can hold them; every edge has a ``role``.

The graph is read from what the earlier stages produced (verdict evidence
chains, link findings, kernel calls, the kernel library's call graph); it
decides nothing. Exports (``write_graph``) are deterministic: sorted nodes and
edges, no timestamps.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from guardscan.link.model import evidence_role
from guardscan.results import BackendVerdict, Evidence, OptionInfo, Role

__all__ = [
    "GRAPH_FORMATS",
    "arch_id",
    "build_graph",
    "choice_id",
    "graph_to_dot",
    "graph_to_json",
    "kernel_id",
    "line_id",
    "option_id",
    "plain",
    "write_graph",
]

GRAPH_FORMATS = (".json", ".graphml", ".dot")

LineText = Callable[[str, int], str]


# -- node ids --------------------------------------------------------------------------------
def option_id(flag: str) -> str:
    return f"option:{flag}"


def choice_id(flag: str, choice: str) -> str:
    return f"choice:{flag}={choice}"


def line_id(path: str, line: int) -> str:
    return f"line:{path}:{line}"


def arch_id(arch: str) -> str:
    return f"arch:{arch}"


def kernel_id(name: str) -> str:
    return f"kernel:{name}"


# -- building --------------------------------------------------------------------------------
def build_graph(analysis: Any) -> nx.DiGraph[str]:
    """The support graph of one analysis (``guardscan.driver.Analysis`` or anything
    with ``result``, ``links`` and optionally ``index`` / ``kernel_judge``)."""
    result = analysis.result
    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.graph.update({
        "name": "guardscan",
        "guardscan": result.guardscan,
        "target": f"{result.target.package} {result.target.version or '?'}",
    })
    index = getattr(analysis, "index", None)
    line_text: LineText = getattr(index, "line_text", None) or _no_text
    flags = add_options(graph, result.options)
    add_verdicts(graph, result.backends)
    links = getattr(analysis, "links", None)
    if links is not None:
        add_findings(graph, getattr(links, "findings", ()), flags, line_text)
        add_kernel_calls(graph, getattr(links, "kernel_calls", ()), flags, line_text)
    library = getattr(getattr(analysis, "kernel_judge", None), "library", None)
    kernel_graph = getattr(library, "graph", None)
    if isinstance(kernel_graph, nx.DiGraph):
        add_kernel_graph(graph, kernel_graph)
    facts = getattr(library, "facts", None)
    if isinstance(facts, Mapping):
        add_kernel_facts(graph, facts)
    return graph


def _no_text(path: str, line: int) -> str:
    return ""


def add_options(graph: nx.DiGraph[str], options: Iterable[OptionInfo]) -> dict[str, str]:
    """Option and choice nodes from the catalog; returns dest -> flag."""
    flags: dict[str, str] = {}
    for option in options:
        flags[option.dest] = option.flag
        _add_node(graph, option_id(option.flag), kind="option", flag=option.flag,
                  dest=option.dest, path=option.path, line=option.line, text=option.help,
                  default=option.default or "")
        platforms = dict(option.platforms)
        for choice in option.choices:
            _add_node(graph, choice_id(option.flag, choice), kind="choice", option=option.flag,
                      choice=choice, platform=platforms.get(choice, ""))
            _add_edge(graph, option_id(option.flag), choice_id(option.flag, choice),
                      role="choice")
    return flags


def add_line(graph: nx.DiGraph[str], path: str, line: int, role: str, text: str = "") -> str:
    """A source-line node; a line met in several roles keeps the first as ``role``
    and all of them in ``roles``."""
    node = line_id(path, line)
    if node not in graph:
        graph.add_node(node, kind="line", path=path, line=line, text=text, role=role,
                       roles=[role])
        return node
    data = graph.nodes[node]
    if role not in data["roles"]:
        data["roles"] = sorted([*data["roles"], role])
    if text and not data.get("text"):
        data["text"] = text
    return node


def add_verdicts(graph: nx.DiGraph[str], verdicts: Iterable[BackendVerdict]) -> None:
    """choice -> arch verdict edges, and each evidence chain as a path of lines
    from the choice to the arch it was judged on."""
    for verdict in verdicts:
        option = option_id(verdict.option)
        choice = choice_id(verdict.option, verdict.choice)
        arch = arch_id(verdict.arch)
        _add_node(graph, option, kind="option", flag=verdict.option)
        _add_node(graph, choice, kind="choice", option=verdict.option, choice=verdict.choice,
                  platform=verdict.platform or "")
        _add_node(graph, arch, kind="arch", arch=verdict.arch)
        _add_edge(graph, option, choice, role="choice")
        _add_edge(graph, choice, arch, role="verdict", verdict=verdict.verdict.value,
                  safe_to_try=verdict.safe_to_try, quantization=verdict.quantization or "",
                  conditions=list(verdict.conditions))
        previous = choice
        for ev in verdict.evidence:
            node = add_line(graph, ev.path, ev.line, ev.role, ev.text)
            if node != previous:
                _add_edge(graph, previous, node, role=ev.role)
            previous = node
        if previous != choice:
            _add_decision(graph, previous, arch, verdict)


def _add_decision(graph: nx.DiGraph[str], last: str, arch: str, verdict: BackendVerdict) -> None:
    """The chain's last line -> arch. Several choices can end on the same line
    with different verdicts, so the edge lists them all; ``verdict`` is their
    common value, or ``mixed``."""
    entry = f"{verdict.option}={verdict.choice}: {verdict.verdict.value}"
    if graph.has_edge(last, arch):
        data = graph.edges[last, arch]
        data["verdicts"] = sorted({*data["verdicts"], entry})
        values = {item.rsplit(": ", 1)[1] for item in data["verdicts"]}
        data["verdict"] = values.pop() if len(values) == 1 else "mixed"
        return
    graph.add_edge(last, arch, role="verdict", verdict=verdict.verdict.value,
                   verdicts=[entry])


def add_findings(graph: nx.DiGraph[str], findings: Iterable[Any], flags: Mapping[str, str],
                 line_text: LineText = _no_text) -> None:
    """Each link finding (gate, default, select, ...) as a line node, tied to
    its option or choice and to the lines of its chain (guard definitions
    included), edge role = the hop's role."""
    for finding in findings:
        if finding.line <= 0:
            continue
        kind = str(finding.kind)  # a FindingKind, or its value
        node = add_line(graph, finding.rel, finding.line, kind,
                        finding.text or line_text(finding.rel, finding.line))
        data = graph.nodes[node]
        data["findings"] = sorted({*data.get("findings", []), kind})
        describe = getattr(finding.condition, "describe", None)
        if describe is not None:
            data["conditions"] = sorted({*data.get("conditions", []), str(describe())})
        flag = flags.get(finding.option or "")
        if flag is not None:
            owner = (choice_id(flag, finding.choice) if finding.choice
                     and choice_id(flag, finding.choice) in graph else option_id(flag))
            _add_edge(graph, owner, node, role=kind)
        _add_hops(graph, node, finding.hops, line_text)


def add_kernel_calls(graph: nx.DiGraph[str], calls: Iterable[Any], flags: Mapping[str, str],
                     line_text: LineText = _no_text) -> None:
    """Call sites into the kernel library: option -> call line -> ``kernel:`` node."""
    for call in calls:
        if call.line <= 0:
            continue
        node = add_line(graph, call.rel, call.line, Role.KERNEL.value,
                        line_text(call.rel, call.line))
        target = kernel_id(call.target)
        _add_node(graph, target, kind="kernel", name=call.target)
        _add_edge(graph, node, target, role="kernel-call")
        flag = flags.get(call.option)
        if flag is not None:
            _add_edge(graph, option_id(flag), node, role="kernel-call")
        _add_hops(graph, node, call.hops, line_text)


def _add_hops(graph: nx.DiGraph[str], node: str, hops: Iterable[Any], line_text: LineText) -> None:
    for order, hop in enumerate(hops, start=1):
        if hop.line <= 0:
            continue
        # the line node takes the role the line plays in evidence chains; the
        # edge keeps what the hop did
        hop_node = add_line(graph, hop.rel, hop.line, evidence_role(hop.role),
                            line_text(hop.rel, hop.line))
        if hop_node != node and not graph.has_edge(node, hop_node):
            graph.add_edge(node, hop_node, role=str(hop.role), note=hop.note, order=order)


def add_kernel_graph(graph: nx.DiGraph[str], kernels: nx.DiGraph[str]) -> None:
    """The kernel library's call graph, node ids prefixed ``kernel:``."""
    for name in sorted(kernels.nodes, key=str):
        attrs = {k: plain(v) for k, v in kernels.nodes[name].items()}
        attrs.update(kind="kernel", name=str(name),
                     kernel_kind=attrs.pop("kind", "function"), path=attrs.pop("rel", ""))
        _add_node(graph, kernel_id(str(name)), **attrs)
    for caller, callee in sorted(kernels.edges, key=lambda e: (str(e[0]), str(e[1]))):
        attrs = {k: plain(v) for k, v in kernels.edges[caller, callee].items()}
        attrs.update(role="call", call_kind=attrs.pop("kind", "call"),
                     path=attrs.pop("rel", ""))
        _add_edge(graph, kernel_id(str(caller)), kernel_id(str(callee)), **attrs)


def add_kernel_facts(graph: nx.DiGraph[str], facts: Mapping[str, Iterable[Any]]) -> None:
    """Kernel facts (decorators, JIT specs, checks...) as lines of the kernel
    library hanging off their function's ``kernel:`` node."""
    for function in sorted(facts):
        node = kernel_id(function)
        _add_node(graph, node, kind="kernel", name=function)
        for fact in facts[function]:
            if fact.line <= 0:
                continue
            line = add_line(graph, fact.rel, fact.line, Role.KERNEL.value, fact.text)
            data = graph.nodes[line]
            data["facts"] = sorted({*data.get("facts", []), str(fact.kind)})
            _add_edge(graph, node, line, role="fact", fact=str(fact.kind),
                      predicate=plain(fact.predicate), note=fact.note)


def _add_node(graph: nx.DiGraph[str], node: str, **attrs: Any) -> None:
    """Add a node, or fill in attributes it does not have yet (first value wins,
    so the order of the input decides, never a dict's hash order)."""
    if node in graph:
        data = graph.nodes[node]
        for key, value in attrs.items():
            if key not in data or data[key] in ("", None):
                data[key] = value
        return
    graph.add_node(node, **attrs)


def _add_edge(graph: nx.DiGraph[str], source: str, target: str, **attrs: Any) -> None:
    if source == target:
        return
    if graph.has_edge(source, target):
        data = graph.edges[source, target]
        for key, value in attrs.items():
            data.setdefault(key, value)
        return
    graph.add_edge(source, target, **attrs)


# -- plain attribute values ------------------------------------------------------------------
def plain(value: Any) -> Any:
    """A value every export can hold: scalars as they are, predicates as their
    description, sequences as lists of plain values, anything else as text."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    describe = getattr(value, "describe", None)
    if callable(describe):
        return str(describe())
    if isinstance(value, Evidence):
        return f"{value.path}:{value.line}"
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=str)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return str(value)


def _sorted_copy(graph: nx.DiGraph[str], scalar_only: bool = False) -> nx.DiGraph[str]:
    """The same graph with nodes and edges in sorted order and plain attributes
    (for GraphML: scalars only, each key one type, ``None`` dropped)."""
    out: nx.DiGraph[str] = nx.DiGraph()
    out.graph.update({str(k): plain(v) for k, v in sorted(graph.graph.items())})
    nodes = sorted(graph.nodes, key=str)
    edges = sorted(graph.edges, key=lambda e: (str(e[0]), str(e[1])))
    node_attrs = {str(n): {str(k): plain(v) for k, v in graph.nodes[n].items()} for n in nodes}
    edge_attrs = {(str(u), str(v)): {str(k): plain(x) for k, x in graph.edges[u, v].items()}
                  for u, v in edges}
    if scalar_only:
        _scalarise([out.graph])
        _scalarise(node_attrs.values())
        _scalarise(edge_attrs.values())
    for node, attrs in node_attrs.items():
        out.add_node(node, **dict(sorted(attrs.items())))
    for (u, v), attrs in edge_attrs.items():
        out.add_edge(u, v, **dict(sorted(attrs.items())))
    return out


def _scalarise(records: Iterable[dict[str, Any]]) -> None:
    """GraphML holds one scalar type per attribute key: lists and mappings become
    JSON text, ``None`` is dropped, and a key whose values mix types becomes text
    everywhere."""
    records = list(records)
    for record in records:
        for key in list(record):
            value = record[key]
            if value is None:
                del record[key]
            elif isinstance(value, (list, dict)):
                record[key] = json.dumps(value, sort_keys=True)
    types: dict[str, set[type]] = {}
    for record in records:
        for key, value in record.items():
            types.setdefault(key, set()).add(type(value))
    mixed = {key for key, seen in types.items() if len(seen) > 1}
    for record in records:
        for key in mixed & record.keys():
            value = record[key]
            record[key] = json.dumps(value) if isinstance(value, bool) else str(value)


# -- export ----------------------------------------------------------------------------------
def graph_to_json(graph: nx.DiGraph[str]) -> str:
    """Node-link JSON (``networkx.node_link_graph(data, edges="edges")`` reads it
    back), sorted keys, nodes and edges."""
    copy = _sorted_copy(graph)
    try:
        data = nx.node_link_data(copy, edges="edges")
    except TypeError:  # networkx < 3.4 names the keyword ``link``
        data = nx.node_link_data(copy, link="edges")
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_DOT_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def dot_quote(text: str) -> str:
    """A DOT double-quoted string."""
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
               .replace("\n", "\\n"))
    return f'"{escaped}"'


def _dot_attrs(attrs: Mapping[str, Any]) -> str:
    parts = []
    for key, value in sorted(attrs.items()):
        value = plain(value)
        if value is None:
            continue
        if isinstance(value, (list, dict)):
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        name = key if _DOT_ID.match(key) else dot_quote(key)
        parts.append(f"{name}={dot_quote(text)}")
    return f" [{', '.join(parts)}]" if parts else ""


def _dot_label(node: str, attrs: Mapping[str, Any]) -> str:
    if attrs.get("kind") == "line" and attrs.get("text"):
        return f"{attrs.get('path')}:{attrs.get('line')}\n{attrs['text']}"
    return node


def graph_to_dot(graph: nx.DiGraph[str]) -> str:
    """Graphviz DOT text, written without pydot; every id quoted."""
    copy = _sorted_copy(graph)
    lines = [f"digraph {dot_quote(str(copy.graph.get('name', 'guardscan')))} {{"]
    graph_attrs = {k: v for k, v in copy.graph.items() if k != "name"}
    if graph_attrs:
        lines.append(f"  graph{_dot_attrs(graph_attrs)};")
    for node in copy.nodes:
        attrs = dict(copy.nodes[node])
        attrs.setdefault("label", _dot_label(node, attrs))
        lines.append(f"  {dot_quote(node)}{_dot_attrs(attrs)};")
    for source, target in copy.edges:
        attrs = dict(copy.edges[source, target])
        if "role" in attrs and "label" not in attrs:
            attrs["label"] = attrs["role"]
        lines.append(f"  {dot_quote(source)} -> {dot_quote(target)}{_dot_attrs(attrs)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_graph(graph: nx.DiGraph[str], path: str | os.PathLike[str]) -> None:
    """Write ``graph`` in the format its file extension names."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".json":
        target.write_text(graph_to_json(graph), encoding="utf-8")
    elif suffix == ".graphml":
        nx.write_graphml(_sorted_copy(graph, scalar_only=True), target, encoding="utf-8")
    elif suffix == ".dot":
        target.write_text(graph_to_dot(graph), encoding="utf-8")
    else:
        raise ValueError(f"unsupported graph format {suffix or '(none)'!r} for {target}: "
                         "use .json, .graphml or .dot")
