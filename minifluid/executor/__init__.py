"""Running Programs: Scope, feed/fetch handling, Executor."""
from .executor import Executor
from .scope import Scope, global_scope, scope_guard

__all__ = ["Executor", "Scope", "global_scope", "scope_guard"]
