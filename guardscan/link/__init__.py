"""link: which code runs when a backend choice is set, and the guards found there.

Findings are collected once for the whole tree, then judged per (choice, arch)
by ``verdict``. A finding is a guard with the condition under which it acts,
already translated to a Predicate by the vocabulary, so the condition says both
*which choice* it is about (``OptionIs`` atoms) and *which devices* (``Device``
atoms). The kinds, one recogniser each:

- ``gate``: a ``raise`` or failing ``assert`` whose path mentions the option and
  the device (``if backend == "x" and not is_sm100_supported(): raise``), found
  directly, inside a function registered for the choice
  (``@register_attention_backend("fa3")``), or one or two calls away from code
  that runs only for the choice.
  A call through a module name that only a conditional import binds fails
  like a raise where the import's test is false (``unbound_imports``). In a
  quantization method's code that runs whenever the method does (a module
  function, a constructor, an implementation of an interface's abstract
  method such as ``apply``), a rejection decided by the options alone
  (``else: raise ValueError("Unknown FP8 GEMM backend")``) is a gate on
  every arch under the methods that reach it (``everywhere``). Elsewhere such
  a rejection is a gate only on the way to a device gate of the same
  function that can hold for the same choice (``before_device_gate``:
  ``assert view.prefill_attention_backend != "cutedsl_mla"`` before the
  Blackwell test). A gate in a module-level function that the tree calls
  only under branch tests holds only there (``caller_reach``: a validator
  the hook runs only for a model with Mamba state).
- ``default``: the option is assigned a choice under a device condition
  (``if is_sm100_supported(): self.moe_runner_backend = "flashinfer_trtllm"``):
  ``auto`` resolves to that choice there.
- ``select``: a device test in the choice's code that picks between two
  implementations and raises in neither branch. It makes no support claim
  (``if is_sm120_supported(): from flashinfer import fp4_quantize``).
- ``quant-gate``: a gate in a quantization method's own code, or the loader's
  ``capability < quant_config.get_min_capability()`` check read through each
  method's config class. Every guard in the quantization directories carries
  the condition under which the methods run its code: ``QuantIs`` of the
  methods whose path reaches it (``method_paths``), so under
  ``--quantization X`` only X's code is evidence; a class X builds only for
  the checkpoints that pick it, among others of its interface, carries
  ``? the checkpoint picks`` it (``checkpoint_picks``).
- ``import``: a module-level name bound only under a device guard (no binding
  in the other branch) and used by the choice's own module: where the guard is
  false the name does not exist and the choice fails with NameError.
- ``doc``: the option's help text says which architectures a choice is for
  (``'flashinfer_deepgemm' (Hopper SM90 only; ...)``). Weak evidence: shown in
  the chain, never deciding a verdict, and checked against the code
  (``doc-drift`` diagnostics).
- ``alias``: code run for a choice sets another option
  (``if cfg.moe_runner_backend == "megamoe": declare_resolution(...,
  moe_a2a_backend="megamoe")``): the choice also stands or falls with that
  option's choice, whose gates the verdict applies to it.
- ``rename``: code sets the option to another of its choices where it holds
  this one, whatever else holds (``if a2a == "ascend_tp":
  declare_resolution(..., moe_a2a_backend="none")``): the choice is judged as
  the one it becomes (``verdict.rename``); a literal table of deprecated
  choices read in a hook (``aliases[old]``) gives one per key
  (``alias_tables``).
- ``requires``: a check without a device test that rejects the choice unless
  another option is given or holds a value (``lora_triton`` "requires
  --enable-lora"): the choice is judged with that companion given, and its
  conditions say so (``companions``, ``verdict.rules.requires``).
- ``platform``: a call from a choice's code into a package the tree keeps
  for a non-CUDA platform (``hardware_backend/npu/``): the choice is that
  platform's, a label and never a verdict (``platform_code``,
  ``verdict.rules.platform``).
- ``kernel-call``: a call into the kernel library from the choice's code, for
  the kernels stage to judge.

Where each part lives: ``model`` (findings, hops, kernel calls; the
``FindingKind`` and ``HopRole`` enums), ``conditions`` (paths and guards),
``gates`` (gates, defaults, calls followed), ``regions`` (registered
functions), ``named`` (modules named for a choice), ``quantization`` (method
tables, thresholds, and the condition of the methods' code),
``method_paths`` (the code each method runs), ``checkpoint_picks`` (classes
a checkpoint picks), ``help_claims`` (help text), ``companions`` (options a choice needs),
``alias_tables`` (tables of deprecated choices), ``platform_code`` (another
platform's packages), ``shared_values`` (an option whose value stands in for
another's where that one is read: the draft model's MoE backends), ``bound_gates`` (a
followed call's raises read with the arguments it passes), ``units`` (incremental
replay), ``collect`` (the driver).
"""

from guardscan.link.collect import collect_links, option_model
from guardscan.link.model import (
    GATE_KINDS,
    Finding,
    FindingKind,
    Hop,
    HopRole,
    KernelCall,
    Links,
    evidence_role,
)

__all__ = ["GATE_KINDS", "Finding", "FindingKind", "Hop", "HopRole", "KernelCall", "Links",
           "collect_links", "evidence_role", "option_model"]
