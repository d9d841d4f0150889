"""ToolState: the lifecycle states of a run, an enumeration without :mod:`enum`.

``from acor import AcorTool`` is paid by every tool at every start, and
importing :mod:`enum` alone costs about half of a bare interpreter's start-up.
ToolState behaves like the Enum it replaces: members are singletons compared
by identity, with ``.name`` and ``.value``; ``ToolState("failed")`` looks a
member up by value; the class iterates, has a length and ``__members__``;
members pickle, copy and print as enum members do::

    >>> ToolState("failed") is ToolState.FAILED
    True
    >>> ToolState.FAILED
    <ToolState.FAILED: 'failed'>
    >>> [state.value for state in ToolState][:3]
    ['created', 'running', 'complete']
"""

# No ``typing``, ``types`` or ``__future__`` import either: each costs more
# than this module. A class's __dict__ is a ``types.MappingProxyType``.
_mappingproxy = type(type.__dict__)


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping


class _StateType(type):
    """The class side of ToolState: lookup by value or name, iteration."""

    _members: "tuple[ToolState, ...]"
    _by_value: "dict[object, ToolState]"  # looked up by any value

    def __call__(cls, value: object) -> "ToolState":
        if isinstance(value, cls):
            return value
        try:
            return cls._by_value[value]
        except (KeyError, TypeError):  # TypeError: an unhashable value
            raise ValueError(f"{value!r} is not a valid {cls.__name__}") \
                from None

    def __getitem__(cls, name: str) -> "ToolState":
        try:
            member = cls.__dict__[name]
        except KeyError:
            raise KeyError(name) from None
        if not isinstance(member, cls):
            raise KeyError(name)
        return member

    def __iter__(cls) -> "Iterator[ToolState]":
        return iter(cls._members)

    def __reversed__(cls) -> "Iterator[ToolState]":
        return reversed(cls._members)

    def __len__(cls) -> int:
        return len(cls._members)

    def __contains__(cls, member: object) -> bool:
        return isinstance(member, cls)

    @property
    def __members__(cls) -> "Mapping[str, ToolState]":
        return _mappingproxy({m.name: m for m in cls._members})

    def __setattr__(cls, name: str, value: object) -> None:
        if isinstance(cls.__dict__.get(name), cls):
            raise AttributeError(f"cannot reassign member {name!r}")
        super().__setattr__(name, value)

    def __delattr__(cls, name: str) -> None:
        if isinstance(cls.__dict__.get(name), cls):
            raise AttributeError(f"cannot delete member {name!r}")
        super().__delattr__(name)


class ToolState(metaclass=_StateType):
    """Where a run is: CREATED -> RUNNING -> COMPLETE | FAILED | CANCELLED,
    or INPUT_NEEDED. ``stop()`` takes one of the three final states."""

    __slots__ = ("name", "value")

    name: str
    value: str

    if TYPE_CHECKING:  # what the metaclass's __call__ takes
        def __init__(self, value: object) -> None: ...

    CREATED: "ToolState"
    RUNNING: "ToolState"
    COMPLETE: "ToolState"
    FAILED: "ToolState"
    CANCELLED: "ToolState"
    INPUT_NEEDED: "ToolState"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{self!r} cannot be changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self!r} cannot be changed")

    def __repr__(self) -> str:
        return f"<ToolState.{self.name}: {self.value!r}>"

    def __str__(self) -> str:
        return f"ToolState.{self.name}"

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> "tuple[type[ToolState], tuple[str]]":
        return ToolState, (self.value,)  # unpickles to the same member

    def __copy__(self) -> "ToolState":
        return self

    def __deepcopy__(self, memo: object) -> "ToolState":
        return self


def _define(cls: "type[ToolState]", pairs: "list[tuple[str, str]]") -> None:
    members: "list[ToolState]" = []
    for name, value in pairs:
        member = object.__new__(cls)
        object.__setattr__(member, "name", name)
        object.__setattr__(member, "value", value)
        type.__setattr__(cls, name, member)
        members.append(member)
    type.__setattr__(cls, "_members", tuple(members))
    type.__setattr__(cls, "_by_value", {m.value: m for m in members})


_define(ToolState, [("CREATED", "created"), ("RUNNING", "running"),
                    ("COMPLETE", "complete"), ("FAILED", "failed"),
                    ("CANCELLED", "cancelled"),
                    ("INPUT_NEEDED", "input_needed")])
