"""Published training throughput the step-time model is calibrated against (docs/workload.md).

Each case states the model shape, parallelism, batch, hardware and the published figure, in the
paper's own metric:

- ``sc21``: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
  Using Megatron-LM", SC21, Table 1 (weak scaling, A100 80GB on Selene: DGX A100 nodes, NVLink
  300 GB/s per GPU per direction, 8 x HDR 200 Gb/s per node). Published: achieved TFLOP/s per
  GPU counting hardware FLOPs with full recomputation, ``96 B s l h^2 (1 + s/6h + V/16lh)`` per
  step. Megatron-LM of 2021: FP16, unfused attention (the score matrix materialised), full
  activation recomputation, no distributed optimizer, FP32 gradients all-reduced after the
  backward pass. Vocabulary 51,200, sequence 2,048. Micro-batch size is not in the table: 1
  assumed.
- ``mlsys23``: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
  Models" (arXiv 2205.05198, MLSys 2023), the MFU of "present work" (sequence parallelism and
  selective recomputation, data-parallel size 1; the same table in Megatron-LM's README).
  Published: model FLOPs utilisation, ``72 B s l h^2 (1 + s/6h + V/12lh)`` per step over 312
  TFLOP/s.
- ``palm``: Chowdhery et al., "PaLM" (2022), Table 3 and Appendix B: PaLM 540B on 6,144 TPU v4
  (two pods of 3,072, 12-way model parallel, 256-way fully sharded data parallel per pod),
  MFU 46.2% counting ``6N + 12 L h S`` per token; rematerialisation on (HFU 57.8%).
  Analytic only (the TPU interconnect is not a modelled fabric: ICI as a 3,072-chip scale-up
  domain of 2,400 Gb/s per chip, an assumption); no TPU parameter is fitted. Micro-batch 4
  assumed.

``fit`` marks the cases the A100 parameters were fitted on (``bench/calibrate_steptime.py``);
the others are held out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    metric: str  # "hw-tflops" (SC21), "mfu-megatron" (MLSys23), "mfu-palm"
    published: float  # TFLOP/s per accelerator, or MFU as a fraction
    spec: str
    fit: bool


def _a100_spec(
    name: str,
    gpus: int,
    layers: int,
    hidden: int,
    heads: int,
    tp: int,
    pp: int,
    batch: int,
    job: dict[str, Any],
) -> str:
    doc = {
        "version": 1,
        "name": name,
        "compute": {
            "accelerators": gpus,
            "accelerators_per_node": 8,
            "accelerator_model": "A100-SXM",
            "scale_up": {"domain_size": 8, "bandwidth_gbps": 2400},
            "nic": {"ports_per_accelerator": 1, "port_speed_gbps": 200},
        },
        "fabrics": {"backend": {"switch": "qm9700"}},
        "job": {
            "model": {
                "name": name,
                "layers": layers,
                "hidden": hidden,
                "ffn_hidden": 4 * hidden,
                "heads": heads,
                "vocab": 51200,
                "sequence_length": 2048,
                "gated_mlp": False,
                "tied_embeddings": True,
            },
            "batch": {"global_batch": batch, "micro_batch": 1},
            "parallelism": {"tp": tp, "pp": pp},
            **job,
        },
    }
    return yaml.safe_dump(doc)


SC21_JOB: dict[str, Any] = {
    "precision": {"activations": "fp16", "gradients": "fp32", "parameters": "fp16"},
    "compute": {"recompute": "full", "attention": "unfused"},
    "overlap": {"dp_grad_reduce": False, "dp_param_gather": False},
}

#: Table 1 of SC21: (billions, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s per GPU)
SC21_TABLE = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]
SC21_FIT = {1.7, 7.5, 39.1, 145.6, 529.6}

MLSYS23_JOB: dict[str, Any] = {
    "precision": {"activations": "bf16", "gradients": "fp32", "parameters": "bf16"},
    "parallelism_extra": {"sequence_parallel": True, "zero": 1},
    "compute": {"recompute": "selective", "attention": "unfused"},
}

#: "present work" rows: (billions, heads, hidden, layers, tp, pp, gpus, batch, MFU)
MLSYS23_TABLE = [
    (22, 64, 6144, 48, 8, 1, 8, 4, 0.415),
    (175, 96, 12288, 96, 8, 8, 64, 64, 0.514),
    (530, 128, 20480, 105, 8, 35, 280, 280, 0.560),
    (1000, 160, 25600, 128, 8, 64, 512, 512, 0.563),
]
MLSYS23_FIT = {22, 530}


def _cases() -> list[Case]:
    out = []
    for b, heads, hidden, layers, tp, pp, gpus, batch, tflops in SC21_TABLE:
        name = f"sc21-gpt-{b:g}b"
        spec = _a100_spec(name, gpus, layers, hidden, heads, tp, pp, batch, SC21_JOB)
        out.append(
            Case(name, "Narayanan et al. SC21, Table 1", "hw-tflops", tflops, spec, b in SC21_FIT)
        )
    for b, heads, hidden, layers, tp, pp, gpus, batch, mfu in MLSYS23_TABLE:
        name = f"mlsys23-gpt-{b:g}b"
        job = {k: v for k, v in MLSYS23_JOB.items() if k != "parallelism_extra"}
        spec = _a100_spec(name, gpus, layers, hidden, heads, tp, pp, batch, job)
        doc = yaml.safe_load(spec)
        doc["job"]["parallelism"].update(MLSYS23_JOB["parallelism_extra"])
        out.append(
            Case(
                name,
                "Korthikanti et al. 2022 (MLSys 2023), MFU table",
                "mfu-megatron",
                mfu,
                yaml.safe_dump(doc),
                b in MLSYS23_FIT,
            )
        )
    palm = {
        "version": 1,
        "name": "palm-540b",
        "compute": {
            "accelerators": 6144,
            "accelerators_per_node": 4,
            "accelerator_model": "TPU-v4",
            "scale_up": {"domain_size": 3072, "technology": "ethernet", "bandwidth_gbps": 2400},
            "nic": {"ports_per_accelerator": 1, "port_speed_gbps": 100},
        },
        "fabrics": {"backend": {"switch": "tomahawk5-64x800g"}},
        "job": {
            "model": {
                "name": "palm-540b",
                "layers": 118,
                "hidden": 18432,
                "ffn_hidden": 73728,
                "heads": 48,
                "kv_heads": 1,
                "vocab": 256000,
                "sequence_length": 2048,
                "gated_mlp": True,
                "tied_embeddings": True,
            },
            "batch": {"global_batch": 2048, "micro_batch": 4},
            "parallelism": {"tp": 12, "pp": 1, "zero": 3, "tp_beyond_scale_up": False},
            "compute": {"recompute": "full", "attention": "flash"},
        },
    }
    out.append(
        Case(
            "palm-540b",
            "Chowdhery et al. 2022 (PaLM), Table 3",
            "mfu-palm",
            0.462,
            yaml.safe_dump(palm),
            False,
        )
    )
    return out


CASES = _cases()


def published_metric(case: Case, step_s: float) -> float:
    """The case's metric for a predicted step time, by the paper's own FLOP count."""
    doc = yaml.safe_load(case.spec)
    m, job = doc["job"]["model"], doc["job"]
    n = doc["compute"]["accelerators"]
    B, s, L, h, V = (
        job["batch"]["global_batch"],
        m["sequence_length"],
        m["layers"],
        m["hidden"],
        m["vocab"],
    )
    if case.metric == "hw-tflops":
        flops = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
        return flops / (step_s * n) / 1e12
    if case.metric == "mfu-megatron":
        flops = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))
        return flops / (step_s * n * 312e12)
    # PaLM: 6N + 12 L h S per token, N the non-embedding weights plus the (tied) embedding
    f = m["ffn_hidden"]
    kv = h // m["heads"] * m["kv_heads"]
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * f
    params = L * per_layer + V * h
    flops = (6 * params + 12 * L * h * s) * B * s
    return flops / (step_s * n * 275e12)
