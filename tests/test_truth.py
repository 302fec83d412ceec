"""guardscan against hand-checked truth (issue 11).

``tests/truth/sglang-*.json`` hold cases labelled by reading the source of a
real SGLang release and the FlashInfer it pins (see ``truthcases.py``). The
hard rule is tested per pair: no case the source calls unsafe (blocked /
unsupported) may be called safe (supported / unknown), and no case the
source shows running may be called unsafe. Agreement (guardscan's verdict in
the case's ``accept``) is reported as a number: printed (``-s``) and written
under the pytest tmp dir.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
import realtrees
import truthcases
from truthcases import ARCHS, SAFE, UNSAFE, VERDICTS, Answer

PAIR_FILES = truthcases.pair_files()
_CASE_KEYS = {"option", "choice", "arch", "quantization", "verdict", "accept", "reason", "where"}
_WHERE = re.compile(r"^(sglang/[\w./-]+\.py|flashinfer/[\w./-]+\.py"
                    r"|flashinfer/data/[\w./-]+\.(?:cu|cuh|h|hpp|cpp|cc)):[1-9][0-9]*$"
                    # a member of a pinned compiled wheel: a line of its Python, or a library
                    r"|^(?:sglang-kernel|sgl-kernel|sgl-flash-mla|sgl-deep-ep|sgl-deep-gemm)=="
                    r"[\w.]+/[\w./-]+(?:\.py:[1-9][0-9]*|\.so)$")


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def test_there_are_truth_files() -> None:
    assert {p.name for p in PAIR_FILES} >= {"sglang-0.5.9.json", "sglang-0.5.23.json"}


@pytest.mark.parametrize("path", PAIR_FILES, ids=_ids(PAIR_FILES))
def test_truth_file_is_well_formed(path: Path) -> None:
    data = truthcases.load_raw(path)
    assert set(data) == {"sglang", "flashinfer", "cases"}, path
    cases = data["cases"]
    assert len(cases) >= 60, f"{path.name}: {len(cases)} cases, want at least 60"
    quantizations = {c.get("quantization") for c in cases}
    # each distinct value costs one scan of the pair
    assert len(quantizations) <= 3, f"{path.name}: quantizations {sorted(map(str, quantizations))}"
    scans = {(c.get("quantization"), c.get("model", "")) for c in cases}
    assert len(scans) <= 5, f"{path.name}: {len(scans)} scans of the pair"
    problems = []
    seen = set()
    for n, case in enumerate(cases):
        where = f"{path.name} case {n} ({case.get('option')} {case.get('choice')} {case.get('arch')})"
        if not _CASE_KEYS <= set(case) <= _CASE_KEYS | {"open", "model", "platform"}:
            problems.append(f"{where}: keys {sorted(case)}")
            continue
        key = (case["option"], case["choice"], case["arch"], case["quantization"],
               case.get("model", ""))
        model = case.get("model", "")
        if model and not (truthcases.MODELS_DIR / f"{model}.json").is_file():
            problems.append(f"{where}: no model file tests/truth/models/{model}.json")
        if key in seen:
            problems.append(f"{where}: duplicate case")
        seen.add(key)
        if not (isinstance(case["option"], str) and case["option"].startswith("--")):
            problems.append(f"{where}: option {case['option']!r}")
        if not (isinstance(case["choice"], str) and case["choice"]):
            problems.append(f"{where}: choice {case['choice']!r}")
        if case["arch"] not in ARCHS:
            problems.append(f"{where}: arch {case['arch']!r} not in {ARCHS}")
        if not (case["quantization"] is None or isinstance(case["quantization"], str)):
            problems.append(f"{where}: quantization {case['quantization']!r}")
        verdict, accept = case["verdict"], case["accept"]
        if verdict not in VERDICTS:
            problems.append(f"{where}: verdict {verdict!r}")
        if not (isinstance(accept, list) and accept and set(accept) <= set(VERDICTS)):
            problems.append(f"{where}: accept {accept!r}")
        elif verdict not in accept:
            problems.append(f"{where}: accept {accept} leaves out the verdict {verdict!r}")
        elif not (set(accept) <= UNSAFE if verdict in UNSAFE else set(accept) <= SAFE):
            problems.append(f"{where}: accept {accept} mixes safe and unsafe verdicts")
        if "platform" in case and case["platform"] not in ("rocm", "npu", "xpu", "hpu", "mps",
                                                            "musa", "cpu", "non-cuda"):
            problems.append(f"{where}: platform {case['platform']!r}")
        if not (isinstance(case["reason"], str) and len(case["reason"].strip()) >= 20):
            problems.append(f"{where}: reason too short")
        if not (isinstance(case["where"], list) and case["where"]):
            problems.append(f"{where}: no `where` lines")
        else:
            problems += [f"{where}: where {w!r} is not sglang/...py:N, flashinfer/...py:N "
                         "or flashinfer/data/...(C++):N, or DIST==V/member (.py:N or .so)"
                         for w in case["where"] if not (isinstance(w, str) and _WHERE.match(w))]
    assert not problems, "\n".join(problems)


@pytest.mark.real
@pytest.mark.parametrize("path", PAIR_FILES, ids=_ids(PAIR_FILES))
def test_where_lines_exist_in_the_real_trees(path: Path) -> None:
    data = truthcases.load_raw(path)
    roots = {"sglang": realtrees.sglang_tree(data["sglang"]).root,
             "flashinfer": realtrees.flashinfer_tree(data["flashinfer"]).root}
    problems = []
    lines_of: dict[str, list[str]] = {}
    for case in data["cases"]:
        for where in case["where"]:
            if "==" in where.split("/", 1)[0]:
                problems += _wheel_member_problems(case, where)
                continue
            rel, _, number = where.rpartition(":")
            file = roots[rel.split("/", 1)[0]] / rel
            if rel not in lines_of:
                lines_of[rel] = (file.read_text(encoding="utf-8").splitlines()
                                 if file.is_file() else [])
            lines = lines_of[rel]
            line = int(number)
            if not lines:
                problems.append(f"{case['option']} {case['choice']} {case['arch']}: no file {file}")
            elif line > len(lines):
                problems.append(f"{case['option']} {case['choice']} {case['arch']}: {where} "
                                f"is past the end ({len(lines)} lines)")
            elif not lines[line - 1].strip():
                problems.append(f"{case['option']} {case['choice']} {case['arch']}: {where} is blank")
    assert not problems, "\n".join(problems)


def _wheel_member_problems(case: dict[str, str], where: str) -> list[str]:
    """A compiled wheel's member named in ``where``: it exists (a library), or
    its line exists and is not blank (Python)."""
    from guardscan.binaries.packages import download_compiled

    spec, _, member = where.partition("/")
    label = f"{case['option']} {case['choice']} {case['arch']}: {where}"
    wheel = download_compiled(spec, realtrees.shared_cache_dir())
    with zipfile.ZipFile(wheel) as archive:
        name, _, number = member.rpartition(":") if member.endswith(tuple("0123456789")) \
            else (member, "", "")
        if name not in archive.namelist():
            return [f"{label}: no member {name} in {wheel.name}"]
        if number:
            lines = archive.read(name).decode("utf-8").splitlines()
            if int(number) > len(lines) or not lines[int(number) - 1].strip():
                return [f"{label}: past the end or blank"]
    return []


@pytest.fixture(scope="module", params=PAIR_FILES, ids=_ids(PAIR_FILES))
def pair_answers(request: pytest.FixtureRequest) -> list[Answer]:
    """guardscan's answer to every case of one pair: one scan per distinct
    quantization value, four archs, kernels on, FlashInfer paired by the
    release's own pin."""
    path: Path = request.param
    cases = truthcases.load_pair(path)
    # acquire (and seed) both wheels the way the other real tests do
    realtrees.sglang_tree(cases[0].sglang)
    realtrees.flashinfer_tree(cases[0].flashinfer)
    return truthcases.answers(cases, realtrees.shared_cache_dir())


def _show(answer: Answer) -> str:
    case = answer.case
    return (f"  {case.label()}: truth {case.verdict} (accept {list(case.accept)}), "
            f"guardscan {answer.verdict or 'nothing'}"
            + (f" (platform: truth {case.platform}, guardscan {answer.platform or 'none'})"
               if case.platform else "") + "\n"
            f"      why: {case.reason}\n"
            f"      where: {', '.join(case.where)}\n"
            f"      guardscan's last evidence: {answer.last_evidence}")


@pytest.mark.real
def test_no_unsafe_case_is_called_safe(pair_answers: list[Answer]) -> None:
    wrong = [a for a in pair_answers if a.called_safe_wrongly and not a.case.open]
    pair = pair_answers[0].case
    if wrong:
        pytest.fail(f"sglang {pair.sglang} + flashinfer {pair.flashinfer}: {len(wrong)} case(s) "
                    f"the source says are unsafe, called safe by guardscan:\n"
                    + "\n".join(map(_show, wrong)), pytrace=False)


@pytest.mark.real
def test_no_supported_case_is_called_unsafe(pair_answers: list[Answer]) -> None:
    wrong = [a for a in pair_answers if a.called_unsafe_wrongly]
    pair = pair_answers[0].case
    if wrong:
        pytest.fail(f"sglang {pair.sglang} + flashinfer {pair.flashinfer}: {len(wrong)} case(s) "
                    f"the source shows running, called unsafe by guardscan:\n"
                    + "\n".join(map(_show, wrong)), pytrace=False)


@pytest.mark.real
def test_agreement_is_reported(pair_answers: list[Answer],
                               tmp_path_factory: pytest.TempPathFactory) -> None:
    pair = pair_answers[0].case
    quantizations = {a.case.quantization for a in pair_answers}
    for quantization in quantizations:
        case = next(a.case for a in pair_answers if a.case.quantization == quantization)
        paired = truthcases.paired_kernels(case, realtrees.shared_cache_dir())
        assert [k for k in paired if k[0] == "flashinfer"] == [
            ("flashinfer", pair.flashinfer)], f"q={quantization}: FlashInfer not paired as the file says"
    missing = [a for a in pair_answers if not a.verdict]
    assert not missing, "guardscan gave no verdict for:\n" + "\n".join(map(_show, missing))
    agree = sum(a.agrees for a in pair_answers)
    total = len(pair_answers)
    head = (f"sglang {pair.sglang} + flashinfer {pair.flashinfer}: agreement "
            f"{agree}/{total} = {agree / total:.1%}")
    lines = [head]
    lines += [f"  differs: {a.case.label()}: truth {a.case.verdict}, guardscan {a.verdict}"
              for a in pair_answers if not a.agrees]
    report = "\n".join(lines)
    print(report)
    out = tmp_path_factory.mktemp("truth") / f"agreement-{pair.sglang}.txt"
    out.write_text(report + "\n")
    assert out.read_text().startswith(lines[0])


@pytest.mark.real
def test_every_choice_of_a_labelled_option_is_labelled_on_every_arch(
        pair_answers: list[Answer]) -> None:
    """A truth file that labels an option labels each of its choices on each of
    the four archs: a gap is where a wrong verdict would go unseen."""
    cases = [a.case for a in pair_answers]
    offered = truthcases.choices(cases[0], realtrees.shared_cache_dir())
    labelled = {c.key for c in cases}
    gaps = sorted(f"{option} {choice} {arch}"
                  for option in {c.option for c in cases}
                  for choice in offered.get(option, ())
                  for arch in ARCHS if (option, choice, arch) not in labelled)
    assert not gaps, f"sglang {cases[0].sglang}: {len(gaps)} unlabelled:\n" + "\n".join(gaps)


@pytest.mark.real
def test_open_cases_are_still_missed(pair_answers: list[Answer]) -> None:
    """A case marked ``open`` (guardscan cannot decide it yet, and says why) is
    expected to be missed; once guardscan gets it right, the mark must go."""
    solved = [a for a in pair_answers if a.case.open and a.agrees]
    assert not solved, "open cases guardscan now decides (remove their \"open\"):\n" + \
        "\n".join(map(_show, solved))


@pytest.mark.real
def test_a_kernel_exclusion_made_only_at_an_env_default_says_the_other_value() -> None:
    """sglang 0.5.19 under modelopt_fp4 on sm120: ``fp4_gemm``'s quant_mode is
    "w4a4" unless SGLANG_FLASHINFER_CUTEDSL_NVFP4_W4A16 is set (read from the
    call sites of ``fp4_gemm``, guards/call_sites.py), so the cute-dsl
    ``mm_fp4`` requirement (no 120) decides, and the verdict says what the
    variable would change; the chain goes through the call site."""
    realtrees.sglang_tree("0.5.19")
    realtrees.flashinfer_tree("0.6.18")
    table, _ = truthcases._analysis("0.5.19", "modelopt_fp4", "", str(realtrees.shared_cache_dir()))
    verdict = table[("--fp4-gemm-backend", "flashinfer_cutedsl", "sm120")]
    assert verdict.verdict.value == "unsupported"
    assert verdict.conditions == (
        "not unsupported with SGLANG_FLASHINFER_CUTEDSL_NVFP4_W4A16=1",)
    where = [(e.path, e.line) for e in verdict.evidence]
    assert ("sglang/srt/layers/quantization/modelopt_quant.py", 2037) in where, where
    assert where[-1] == ("flashinfer/gemm/gemm_base.py", 6176)
    # cudnn, made on the same branch, is supported, and says nothing of the variable
    cudnn = table[("--fp4-gemm-backend", "flashinfer_cudnn", "sm120")]
    assert (cudnn.verdict.value, cudnn.conditions) == ("supported", ())
