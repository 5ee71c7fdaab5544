"""autopar from Python: the planner's verbs in-process (no subprocess), with keyword arguments
named as the command's flags, typed results and the command's errors as exceptions.

    import autopar
    best = autopar.search(model="llama2-7b", nodes=1, gbs=32)
    best.to_dict() == json.loads(`autopar search --model llama2-7b --nodes 1 --gbs 32 --json`)

docs/python.md describes the API; autopar.from_torch traces a PyTorch module into a graph.
"""

from ._api import (DoesNotFit, EstimateResult, GroupPipelineResult, GroupShare, PlanResult,
                   Result, SearchResult, SharedPlanResult, clusters, estimate, models, plan,
                   search, validate)
from ._autopar import __version__, plan_format_version
from .graph import Graph

# Shown as autopar.DoesNotFit in tracebacks, where users catch it.
DoesNotFit.__module__ = __name__

__all__ = ["DoesNotFit", "EstimateResult", "GroupPipelineResult", "GroupShare", "PlanResult",
           "Result", "SearchResult",
           "SharedPlanResult", "clusters",
           "estimate", "models", "plan", "search", "validate", "from_torch", "Graph",
           "__version__", "plan_format_version"]


def __getattr__(name):
    # The PyTorch front end imports torch, which takes a second: only when it is used.
    if name == "from_torch":
        from . import torch_frontend
        return getattr(torch_frontend, name)
    raise AttributeError(f"module 'autopar' has no attribute '{name}'")
