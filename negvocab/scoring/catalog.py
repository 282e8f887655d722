"""The built-in methods: every scorer negvocab ships, each one :class:`~negvocab.scoring.methods.Method`
entry with its kernels, parameters, paper and capabilities (the registry is
:mod:`negvocab.scoring.methods`, which imports this module at its end; a plug-in registers the same way
with :func:`~negvocab.scoring.methods.register_method`)."""

from __future__ import annotations

from negvocab.scoring.methods import Method, Param, _builtin, register_method
from negvocab.scoring.param_registry import PARAMS, _p, _seal_builtins

__all__ = ["ADANEG_PARAM_NAMES", "ADANEG_PROXIES", "ADANEG_SCORES"]

_S = "negvocab.scoring"
_BUILTINS: tuple[Method, ...] = (
    Method("mcm", f"{_S}.mcm:mcm", ("T",),
           "Ming et al., Delving into out-of-distribution detection with vision-language representations, "
           "NeurIPS 2022"),
    Method("glmcm", f"{_S}.mcm:glmcm", ("T", "lam"),
           "Miyai et al., Zero-shot in-distribution detection in multi-object settings using vision-language "
           "foundation models, 2023",
           aliases=("gl-mcm", "gl_mcm"), inputs=("local",)),
    Method("neglabel", f"{_S}.neglabel:neglabel", ("tau", "groups", "grouping", "seed", "topk"),
           "Jiang et al., Negative label guided OOD detection with pretrained vision-language models, ICLR 2024",
           needs_negatives=True, one_pass_kernel=f"{_S}.neglabel:neglabel_prefixes",
           device_bound=(("grouping", "neglabel"),),
           gains_kernel=f"{_S}.incremental:neglabel_gains", topk_kernel=f"{_S}.explain:neglabel_topk"),
    Method("eoe", f"{_S}.eoe:eoe", ("beta", "T"),
           "Cao et al., Envisioning outlier exposure by large language models for out-of-distribution detection, "
           "ICML 2024",
           needs_negatives=True, one_pass_kernel=f"{_S}.eoe:eoe_prefixes",
           gains_kernel=f"{_S}.incremental:eoe_gains"),
    Method("neglabel_eoe", f"{_S}.eoe:neglabel_eoe", ("tau", "groups", "grouping", "seed", "beta", "penalty_T"),
           "Rozumnyi et al., Fi-ImageNet-1k: An OOD Benchmark From the Inside of the ImageNet-1k Validation Set, "
           "arXiv:2609.01027",
           needs_negatives=True, aliases=("neglabel+eoe", "neglabel-eoe"),
           one_pass_kernel=f"{_S}.eoe:neglabel_eoe_prefixes",
           device_bound=(("grouping", "neglabel"),), gains_kernel=f"{_S}.incremental:neglabel_eoe_gains",
           hints=(("T", "penalty_T",
                   "T is the temperature of mcm/glmcm/eoe; neglabel_eoe's penalty takes penalty_T (default: tau)"),)),
    Method("msp", f"{_S}.logits:msp", ("logit_scale",),
           "Hendrycks and Gimpel, A baseline for detecting misclassified and out-of-distribution examples in "
           "neural networks, ICLR 2017",
           aliases=("maxsoftmax",), model_scale="logit_scale"),
    Method("maxlogit", f"{_S}.logits:maxlogit", ("logit_scale",),
           "Hendrycks et al., Scaling out-of-distribution detection for real-world settings, ICML 2022",
           aliases=("max-logit", "max_logit"), model_scale="logit_scale"),
    Method("energy", f"{_S}.logits:energy", ("logit_scale",),
           "Liu et al., Energy-based out-of-distribution detection, NeurIPS 2020", model_scale="logit_scale"),
    Method("gen", f"{_S}.logits:gen", ("logit_scale", "gamma", "top_classes"),
           "Liu et al., GEN: Pushing the limits of softmax-based out-of-distribution detection, CVPR 2023",
           model_scale="logit_scale"),
)  # fmt: skip
for _m in _BUILTINS:
    _builtin(_m)

# -- AdaNeg: a built-in stream method; its kernel is a StreamMethod class
#: AdaNeg's proxies: task-adaptive (slot mean) or sample-adaptive (slots weighted by their cosine to the image)
ADANEG_PROXIES: tuple[str, ...] = ("task", "sample")
#: how AdaNeg mixes its adaptive and vanilla NegLabel scores (their ``in_score``)
ADANEG_SCORES: tuple[str, ...] = ("combine", "adaptive", "vanilla", "multiply")
PARAMS.update([
    _p("adaneg_groups", int, 5,
       "AdaNeg: NegLabel groups of its vanilla and adaptive scores (their group_num).", check="min", low=1),
    _p("adaneg_memory", int, 10,
       "AdaNeg: memory slots per class beside the text embedding (their memleng; their code fills "
       "memleng - 1 of them).", check="min", low=2),
    _p("adaneg_threshold", float, 0.5,
       "AdaNeg: middle t of the confidence gates (their thres).",
       check="unit"),
    _p("adaneg_gap", float, 0.5,
       "AdaNeg: gap of the gates: ID above t + gap (1 - t), OOD below t - gap t (their gap).", check="nonneg"),
    _p("adaneg_lambda", float, 0.1,
       "AdaNeg: weight of vanilla NegLabel in the combined score (their lambdaval).", check="nonneg"),
    _p("adaneg_beta", float, 5.0,
       "AdaNeg: sharpness of the sample-adaptive slot weights exp(-beta (1 - cos)) (their beta; their "
       "script's 5.5 is cut to int 5 by their code).", check="nonneg"),
    _p("adaneg_proxies", str, "task",
       "AdaNeg proxies: task (slot mean; their headline run) or sample (weighted per image; their samada).",
       check="choice", choices=ADANEG_PROXIES),
    _p("adaneg_score", str, "combine",
       "AdaNeg score: combine (adaptive + lambda x vanilla), adaptive, vanilla or multiply (their in_score).",
       check="choice", choices=ADANEG_SCORES),
])  # fmt: skip
#: AdaNeg's parameters in the registry (the shared tau and seed first: their logit scale 1/tau and SEED)
ADANEG_PARAM_NAMES: tuple[str, ...] = ("tau", "seed", *(n for n in PARAMS if n.startswith("adaneg_")))
_builtin(
    Method("adaneg", None, ADANEG_PARAM_NAMES,  # type: ignore[arg-type]  # a stream method has no kernel
           "Zhang and Zhang, AdaNeg: Adaptive negative proxy guided OOD detection with vision-language models, "
           "NeurIPS 2024",
           needs_negatives=True, kind="stream", stream=f"{_S}.adaneg:AdaNeg")
)  # fmt: skip


# -- NegRefine -------------------------------------------------------------------------------------
register_method(
    "negrefine",
    f"{_S}.negrefine:negrefine",
    [
        "tau", "groups", "grouping", "seed",
        Param("mm_weight", float, 2.0, "NegRefine: weight w of the multi-matching term (their 2).",
              check="nonneg"),
        Param("mm_k_id", int, 5, "NegRefine: nearest ID classes paired in the multi-matching term (their 5).",
              "--mm-k-id", check="min", low=1),
        Param("mm_k_neg", int, 5, "NegRefine: nearest negatives paired in the multi-matching term (their 5).",
              "--mm-k-neg", check="min", low=1),
    ],
    needs_negatives=True,
    inputs=("pair_texts",),
    device_bound=(("grouping", "neglabel"),),
    paper="Ansari et al., NegRefine: Refining Negative Label-Based Zero-Shot OOD Detection, ICCV 2025",
)  # fmt: skip

# -- TANL and OODD: stream methods registered by their own modules
from negvocab.scoring import tanl as _tanl  # noqa: E402, F401, I001
from negvocab.scoring import oodd as _oodd  # noqa: E402, F401
from negvocab.scoring import ants as _ants  # noqa: E402, F401

_seal_builtins()
