"""Running Programs: Scope, feed/fetch handling, Executor."""
from .executor import Executor
from .feed_fetch import as_lodtensor as _as_lodtensor  # noqa: F401  (fluid.executor._as_lodtensor)
from .scope import Scope, global_scope, scope_guard

__all__ = ["Executor", "Scope", "global_scope", "scope_guard"]
