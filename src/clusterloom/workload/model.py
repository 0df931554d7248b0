"""Model arithmetic: parameter counts and training FLOPs from the model's shape.

Assumptions (Megatron-LM GPT-style decoder):
- attention: Q and output projections ``h x h`` each, K and V ``h x h_kv`` each
  (``h_kv = h * kv_heads / heads``);
- MLP: ``3 h f`` weights when gated (SwiGLU), ``2 h f`` otherwise; a MoE layer has ``experts``
  (plus ``shared_experts``) such MLPs of width ``expert_ffn_hidden`` and a router ``h x experts``;
- embeddings ``vocab x h``, and as many again for the output head unless tied; norms and biases
  are ignored (well under 0.1% of the weights);
- training (model) FLOPs per token: ``6 x`` the weights a token multiplies with (forward 2,
  backward 4: every weight but the input embedding, a table lookup; tied embeddings count once,
  as the output layer), plus causal attention ``6 x layers x sequence x h`` (score and value
  products, half masked). ``compute.py`` sums the same from its operations.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterloom.spec.job import ModelSpec


@dataclass(frozen=True)
class ModelShape:
    """Weights of the model, split the ways parallelism and FLOPs need them."""

    attention_per_layer: int
    mlp_per_dense_layer: int
    expert_mlp: int
    experts_per_moe_layer: int
    active_experts_per_moe_layer: int
    router_per_moe_layer: int
    dense_layers: int
    moe_layers: int
    embedding: int
    kv_width: int

    @property
    def dense_parameters(self) -> int:
        """Weights every rank of a TP x PP slice holds a share of (all but the experts)."""
        layers = self.dense_layers + self.moe_layers
        return (
            layers * self.attention_per_layer
            + self.dense_layers * self.mlp_per_dense_layer
            + self.moe_layers * self.router_per_moe_layer
            + self.embedding
        )

    @property
    def expert_parameters(self) -> int:
        return self.moe_layers * self.experts_per_moe_layer * self.expert_mlp

    @property
    def parameters(self) -> int:
        return self.dense_parameters + self.expert_parameters

    @property
    def active_parameters(self) -> int:
        """Weights one token passes through."""
        return self.dense_parameters + self.moe_layers * self.active_experts_per_moe_layer * (
            self.expert_mlp
        )


def model_shape(m: ModelSpec) -> ModelShape:
    h = m.hidden
    kv = h * (m.kv_heads or m.heads) // m.heads
    mats = 3 if m.gated_mlp else 2
    moe = m.moe
    if moe is None:
        moe_layers, experts, active, expert_mlp, router = 0, 0, 0, 0, 0
    else:
        candidates = range(moe.dense_layers, m.layers)
        moe_layers = sum(1 for i in candidates if (i - moe.dense_layers) % moe.every == 0)
        experts = moe.experts + moe.shared_experts
        active = moe.top_k + moe.shared_experts
        expert_mlp = mats * h * moe.expert_ffn_hidden
        router = h * moe.experts
    return ModelShape(
        attention_per_layer=2 * h * h + 2 * h * kv,
        mlp_per_dense_layer=mats * h * m.ffn_hidden,
        expert_mlp=expert_mlp,
        experts_per_moe_layer=experts,
        active_experts_per_moe_layer=active,
        router_per_moe_layer=router,
        dense_layers=m.layers - moe_layers,
        moe_layers=moe_layers,
        embedding=m.vocab * h * (1 if m.tied_embeddings else 2),
        kv_width=kv,
    )


def training_flops_per_token(m: ModelSpec) -> float:
    """Forward plus backward model FLOPs for one token (no activation recomputation)."""
    shape = model_shape(m)
    lookup = 0 if m.tied_embeddings else m.vocab * m.hidden
    return 6.0 * (shape.active_parameters - lookup) + 6.0 * m.layers * m.sequence_length * m.hidden
