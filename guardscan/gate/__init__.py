"""gate: fail-fast checks for a fork, for the choices a kernel excludes on one architecture.

A choice is ``unsupported`` on an arch when SGLang accepts it but a kernel on
its path does not run there: the server loads its weights and then dies.
``guardscan gate --arch A`` proposes, for each such choice, a check in the
version's own server-argument validation that refuses it at start-up::

    if self.moe_runner_backend == "flashinfer_trtllm" and is_sm120_supported():
        raise ValueError("--moe-runner-backend flashinfer_trtllm does not run on ...")

The check is written with a guard function the tree already defines (so the
fork reads as the tree's own code) and in a form guardscan reads as a gate,
so a fresh scan shows the choice ``blocked`` at the new line.

Reading stays on the stdlib ``ast`` and the scan's own stages; only
``write`` uses libcst (it keeps the file's formatting and comments), and it is
imported only when a check is written.

* ``guards``: the guard functions the file can call, and the one that is true
  on A and nowhere the choice runs;
* ``placement``: where the check goes (the method that already checks the
  option, else the class's validation method);
* ``plan``: the checks for one scan and one arch, and what cannot be gated;
* ``write``: the edit, with libcst.
"""

from __future__ import annotations

from guardscan.gate.guards import GuardFunction, choose_guard, guard_functions
from guardscan.gate.placement import Placement, find_placement
from guardscan.gate.plan import Check, GatePlan, NotGated, plan_gates

__all__ = ["Check", "GatePlan", "GuardFunction", "NotGated", "Placement", "choose_guard",
           "find_placement", "guard_functions", "plan_gates"]
