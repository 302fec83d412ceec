"""The support graph: built from tiny hand-made analyses, written in every format
and read back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import networkx as nx
import pytest

from guardscan.graph import (
    arch_id,
    build_graph,
    choice_id,
    graph_to_dot,
    graph_to_json,
    kernel_id,
    line_id,
    option_id,
    plain,
    write_graph,
)
from guardscan.link import Finding, Hop, KernelCall, Links
from guardscan.predicate import Unknown
from guardscan.results import (
    BackendVerdict,
    Evidence,
    OptionInfo,
    PackageRef,
    ScanResult,
    Verdict,
)

FLAG = "--moe-runner-backend"
SERVER_ARGS = "sglang/srt/server_args.py"
DEFINITION = Evidence(SERVER_ARGS, 30, "link", "parser.add_argument(", "choices")
GUARD = Evidence(SERVER_ARGS, 10, "guard", "if not is_sm100_supported():")
GATE = Evidence(SERVER_ARGS, 11, "gate", 'raise ValueError("sm100 only")', "raises on sm120")


def tiny_result() -> ScanResult:
    option = OptionInfo(FLAG, "moe_runner_backend", ("auto", "flashinfer_trtllm"),
                        SERVER_ARGS, 30, help="MoE runner", default="auto")
    return ScanResult(
        guardscan="0.1.0",
        target=PackageRef("sglang", "0.5.9", "/t/sglang"),
        archs=["sm100", "sm120"],
        options=[option],
        backends=[
            BackendVerdict(FLAG, "auto", "sm100", None, Verdict.UNKNOWN, (DEFINITION,)),
            BackendVerdict(FLAG, "auto", "sm120", None, Verdict.UNKNOWN, (DEFINITION,)),
            BackendVerdict(FLAG, "flashinfer_trtllm", "sm100", None, Verdict.SUPPORTED,
                           (DEFINITION, GUARD, GATE)),
            BackendVerdict(FLAG, "flashinfer_trtllm", "sm120", None, Verdict.BLOCKED,
                           (DEFINITION, GUARD, GATE)),
        ],
    )


def tiny_links() -> Links:
    gate = Finding("gate", SERVER_ARGS, 11, Unknown("device"),
                   hops=(Hop(SERVER_ARGS, 10, "guard"),
                         Hop("sglang/srt/utils.py", 5, "definition", "what the guard means"),
                         Hop("sglang/srt/nowhere.py", 0, "call")),
                   option="moe_runner_backend")
    default = Finding("default", SERVER_ARGS, 20, Unknown("device"),
                      choice="flashinfer_trtllm", option="moe_runner_backend")
    call = KernelCall("moe_runner_backend", Unknown("x"), "flashinfer.fused_moe.run",
                      "sglang/srt/layers/moe.py", 7,
                      hops=(Hop("sglang/srt/layers/moe.py", 3, "link"),))
    return Links(findings=[gate, default], kernel_calls=[call])


def tiny_analysis(kernel_judge: Any = None) -> SimpleNamespace:
    texts = {("sglang/srt/utils.py", 5): "def is_sm100_supported():"}
    index = SimpleNamespace(line_text=lambda rel, line: texts.get((rel, line), ""))
    return SimpleNamespace(result=tiny_result(), links=tiny_links(), index=index,
                           kernel_judge=kernel_judge)


@pytest.fixture
def graph() -> nx.DiGraph:  # type: ignore[type-arg]
    return build_graph(tiny_analysis())


def test_node_ids() -> None:
    assert option_id(FLAG) == "option:--moe-runner-backend"
    assert choice_id(FLAG, "cutlass") == "choice:--moe-runner-backend=cutlass"
    assert line_id("a/b.py", 12) == "line:a/b.py:12"
    assert arch_id("sm120") == "arch:sm120"
    assert kernel_id("flashinfer.f") == "kernel:flashinfer.f"


def test_option_choice_and_verdict_edges(graph: nx.DiGraph) -> None:  # type: ignore[type-arg]
    option = option_id(FLAG)
    trtllm = choice_id(FLAG, "flashinfer_trtllm")
    assert graph.nodes[option]["kind"] == "option"
    assert graph.nodes[option]["dest"] == "moe_runner_backend"
    assert graph.edges[option, trtllm]["role"] == "choice"
    assert graph.nodes[arch_id("sm120")]["kind"] == "arch"
    verdict = graph.edges[trtllm, arch_id("sm120")]
    assert verdict["role"] == "verdict" and verdict["verdict"] == "blocked"
    assert verdict["safe_to_try"] is False
    assert graph.edges[trtllm, arch_id("sm100")]["verdict"] == "supported"


def test_evidence_chain_becomes_a_path(graph: nx.DiGraph) -> None:  # type: ignore[type-arg]
    trtllm = choice_id(FLAG, "flashinfer_trtllm")
    path = [trtllm, line_id(SERVER_ARGS, 30), line_id(SERVER_ARGS, 10),
            line_id(SERVER_ARGS, 11)]
    assert nx.is_path(graph, path)
    assert graph.edges[path[2], path[3]]["role"] == "gate"
    gate = graph.nodes[line_id(SERVER_ARGS, 11)]
    assert (gate["kind"], gate["path"], gate["line"], gate["role"]) == (
        "line", SERVER_ARGS, 11, "gate")
    assert gate["text"] == 'raise ValueError("sm100 only")'
    # the last line of both chains ends on both archs, with both verdicts listed
    decision = graph.edges[line_id(SERVER_ARGS, 11), arch_id("sm120")]
    assert decision["verdict"] == "blocked"
    assert graph.edges[line_id(SERVER_ARGS, 11), arch_id("sm100")]["verdict"] == "supported"


def test_shared_decision_line_with_different_verdicts_is_mixed() -> None:
    result = tiny_result()
    result.backends.append(BackendVerdict(FLAG, "auto", "sm120", None, Verdict.BLOCKED,
                                          (DEFINITION, GUARD, GATE)))
    graph = build_graph(SimpleNamespace(result=result, links=None, kernel_judge=None))
    edge = graph.edges[line_id(SERVER_ARGS, 11), arch_id("sm120")]
    assert edge["verdict"] == "blocked"
    assert edge["verdicts"] == [f"{FLAG}=auto: blocked", f"{FLAG}=flashinfer_trtllm: blocked"]
    result.backends.append(BackendVerdict(FLAG, "x", "sm120", None, Verdict.SUPPORTED,
                                          (DEFINITION, GUARD, GATE)))
    graph = build_graph(SimpleNamespace(result=result, links=None, kernel_judge=None))
    assert graph.edges[line_id(SERVER_ARGS, 11), arch_id("sm120")]["verdict"] == "mixed"


def test_findings_join_their_hops(graph: nx.DiGraph) -> None:  # type: ignore[type-arg]
    gate = line_id(SERVER_ARGS, 11)
    definition = line_id("sglang/srt/utils.py", 5)
    assert graph.nodes[gate]["findings"] == ["gate"]
    assert graph.edges[gate, definition]["role"] == "definition"
    assert graph.nodes[definition]["role"] == "guard"
    assert graph.nodes[definition]["text"] == "def is_sm100_supported():"
    assert line_id("sglang/srt/nowhere.py", 0) not in graph  # line 0: no line to show
    assert graph.edges[option_id(FLAG), gate]["role"] == "gate"
    default = line_id(SERVER_ARGS, 20)
    assert graph.edges[choice_id(FLAG, "flashinfer_trtllm"), default]["role"] == "default"


def test_kernel_calls(graph: nx.DiGraph) -> None:  # type: ignore[type-arg]
    site = line_id("sglang/srt/layers/moe.py", 7)
    kernel = kernel_id("flashinfer.fused_moe.run")
    assert graph.edges[site, kernel]["role"] == "kernel-call"
    assert graph.edges[option_id(FLAG), site]["role"] == "kernel-call"
    assert graph.nodes[kernel]["kind"] == "kernel"
    assert graph.has_edge(site, line_id("sglang/srt/layers/moe.py", 3))


def test_kernel_library_graph_is_added_under_a_prefix() -> None:
    library_graph: nx.DiGraph = nx.DiGraph()  # type: ignore[type-arg]
    library_graph.add_node("flashinfer.fused_moe.run", rel="flashinfer/fused_moe.py", line=4,
                           kind="function")
    library_graph.add_node("flashinfer.fused_moe.sm100", rel="flashinfer/fused_moe.py",
                           line=9, kind="function")
    library_graph.add_edge("flashinfer.fused_moe.run", "flashinfer.fused_moe.sm100",
                           rel="flashinfer/fused_moe.py", line=6, kind="call",
                           condition=Unknown("backend"), select=True, sites=1)
    fact = SimpleNamespace(kind="decorator", rel="flashinfer/fused_moe.py", line=8,
                           text="@supported_compute_capability([100])",
                           predicate=Unknown("sm"), note="")
    library = SimpleNamespace(graph=library_graph,
                              facts={"flashinfer.fused_moe.sm100": [fact]})
    graph = build_graph(tiny_analysis(SimpleNamespace(library=library)))
    run, sm100 = kernel_id("flashinfer.fused_moe.run"), kernel_id("flashinfer.fused_moe.sm100")
    assert graph.nodes[run]["path"] == "flashinfer/fused_moe.py"
    assert graph.nodes[run]["kernel_kind"] == "function"
    edge = graph.edges[run, sm100]
    assert edge["role"] == "call" and isinstance(edge["condition"], str)
    fact_line = line_id("flashinfer/fused_moe.py", 8)
    assert graph.edges[sm100, fact_line]["role"] == "fact"
    assert graph.nodes[fact_line]["facts"] == ["decorator"]
    # the sglang call site reaches the library's own call graph
    assert nx.has_path(graph, option_id(FLAG), fact_line)


def test_kernel_judge_without_library_is_fine() -> None:
    graph = build_graph(tiny_analysis(SimpleNamespace()))
    assert graph.number_of_nodes() > 0


def test_plain_values() -> None:
    assert plain(3) == 3 and plain(None) is None and plain("x") == "x"
    assert plain(("a", 1)) == ["a", 1]
    assert plain({"b", "a"}) == ["a", "b"]
    assert plain(Unknown("env")) == Unknown("env").describe()
    assert plain(Path("a")) == "a"


# -- export ----------------------------------------------------------------------------------
def _all_attrs_plain(graph: nx.DiGraph) -> bool:  # type: ignore[type-arg]
    def ok(value: Any) -> bool:
        if isinstance(value, list):
            return all(ok(v) for v in value)
        return isinstance(value, (str, int, float, bool))

    return all(ok(v) for _, data in graph.nodes(data=True) for v in data.values()) and all(
        ok(v) for _, _, data in graph.edges(data=True) for v in data.values())


def test_built_graph_has_plain_attributes(graph: nx.DiGraph) -> None:  # type: ignore[type-arg]
    assert _all_attrs_plain(graph)
    assert all("role" in data for _, _, data in graph.edges(data=True))


def test_json_round_trip(graph: nx.DiGraph, tmp_path: Path) -> None:  # type: ignore[type-arg]
    target = tmp_path / "g.json"
    write_graph(graph, target)
    data = json.loads(target.read_text(encoding="utf-8"))
    assert [n["id"] for n in data["nodes"]] == sorted(graph.nodes)
    back = nx.node_link_graph(data, edges="edges")
    assert set(back.nodes) == set(graph.nodes)
    assert set(back.edges) == set(graph.edges)
    assert back.nodes[line_id(SERVER_ARGS, 11)]["role"] == "gate"
    assert back.is_directed()


def test_json_is_deterministic() -> None:
    first = graph_to_json(build_graph(tiny_analysis()))
    result = tiny_result()
    result.backends.reverse()
    again = build_graph(SimpleNamespace(result=result, links=tiny_links(), kernel_judge=None,
                                        index=tiny_analysis().index))
    assert first == graph_to_json(build_graph(tiny_analysis()))
    # input order changes no node or edge, only which role a line met first
    reordered = json.loads(graph_to_json(again))
    assert [n["id"] for n in reordered["nodes"]] == [n["id"] for n in json.loads(first)["nodes"]]
    assert [(e["source"], e["target"]) for e in reordered["edges"]] == [
        (e["source"], e["target"]) for e in json.loads(first)["edges"]]


def test_graphml_round_trip(graph: nx.DiGraph, tmp_path: Path) -> None:  # type: ignore[type-arg]
    target = tmp_path / "g.graphml"
    write_graph(graph, target)
    back = nx.read_graphml(target)
    assert set(back.nodes) == set(graph.nodes)
    assert set(back.edges) == set(graph.edges)
    gate = back.nodes[line_id(SERVER_ARGS, 11)]
    assert gate["line"] == 11
    assert json.loads(gate["roles"]) == ["gate"]  # lists become JSON text
    assert back.edges[choice_id(FLAG, "flashinfer_trtllm"), arch_id("sm120")][
        "verdict"] == "blocked"


def test_graphml_mixed_and_missing_values(tmp_path: Path) -> None:
    small: nx.DiGraph = nx.DiGraph()  # type: ignore[type-arg]
    small.add_node("a", line=1, extra=None, tags={"x": 1})
    small.add_node("b", line="12a")
    small.add_edge("a", "b", role="r", weight=1.5)
    write_graph(small, tmp_path / "s.graphml")
    back = nx.read_graphml(tmp_path / "s.graphml")
    assert back.nodes["a"]["line"] == "1" and back.nodes["b"]["line"] == "12a"
    assert "extra" not in back.nodes["a"]
    assert json.loads(back.nodes["a"]["tags"]) == {"x": 1}
    assert back.edges["a", "b"]["weight"] == 1.5


_DOT_NODE = re.compile(r'^  "(?:[^"\\]|\\.)*"( \[.*\])?;$')
_DOT_EDGE = re.compile(r'^  "(?:[^"\\]|\\.)*" -> "(?:[^"\\]|\\.)*"( \[.*\])?;$')


def test_dot_sanity(graph: nx.DiGraph, tmp_path: Path) -> None:  # type: ignore[type-arg]
    target = tmp_path / "g.dot"
    write_graph(graph, target)
    text = target.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == 'digraph "guardscan" {' and lines[-1] == "}"
    body = [line for line in lines[1:-1] if not line.startswith("  graph ")]
    nodes = [line for line in body if _DOT_NODE.match(line) and " -> " not in line]
    edges = [line for line in body if _DOT_EDGE.match(line)]
    assert len(nodes) == graph.number_of_nodes()
    assert len(edges) == graph.number_of_edges()
    assert len(nodes) + len(edges) == len(body)
    assert '"line:sglang/srt/server_args.py:11"' in text
    assert 'text="raise ValueError(\\"sm100 only\\")"' in text  # quotes escaped


def test_dot_quotes_odd_ids_and_keys() -> None:
    small: nx.DiGraph = nx.DiGraph()  # type: ignore[type-arg]
    small.add_node('a "b"\nc', **{"odd key": "v", "flag": True})
    small.add_edge('a "b"\nc', "d\\e", role="x")
    text = graph_to_dot(small)
    assert '"a \\"b\\"\\nc"' in text
    assert '"d\\\\e"' in text
    assert '"odd key"="v"' in text and 'flag="true"' in text


@pytest.mark.parametrize("name", ["g.png", "g", "g.gexf"])
def test_unknown_extension_is_an_error(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"use \.json, \.graphml or \.dot"):
        write_graph(nx.DiGraph(), tmp_path / name)
