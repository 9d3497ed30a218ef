"""What the installed torch supports, for tests that skip where it lacks a feature."""

import torch


def fused_adamw_on_cpu() -> bool:
    """torch >= 2.4 has a fused AdamW for the CPU; older ones refuse `fused` there (or have no
    `fused` at all, torch 1.12 of the stock AllenNLP 2.10.1 stack)."""
    try:
        torch.optim.AdamW([torch.zeros(1, requires_grad=True)], fused=True)
    except (TypeError, RuntimeError, ValueError):
        return False
    return True
