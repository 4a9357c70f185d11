"""Arrays a kernel uses but does not own: borrowed arguments and scratch held between calls.

``borrowed(a)``: the array ``a`` inside a kernel without reference counting on it or its views.

Why: numba counts references on every array view a kernel makes (an atomic increment when the
view is made, a decrement when it dies). The model kernels cut a packed model into 17 table
views per call (:func:`hebictl.model.kernels._unpack`), and the counting cost a single FK call
about 0.06 µs of 0.6 (measured against the same kernel on borrowed tables). A borrowed array
has no owner pointer (numba's meminfo is null), so it and the views cut from it count nothing.

Only for what outlives the kernel call by construction: an entry kernel's arguments, which the
calling Python frame holds until the kernel returns. Never for an array the kernel allocates
(numba would free it at its last use, under the borrowed views) nor for anything the kernel
returns or stores.

``exclusive(a)``: scratch a kernel keeps between calls (a region of an argument) instead of
allocating it per call (an allocation cost a model kernel ~0.04 µs). Sound only in kernels
compiled without ``nogil``: such a kernel holds the GIL from entry to return, so no other thread
runs any Python or GIL-holding kernel meanwhile, and nothing else may touch the region. Compiled
code gets ``a`` itself. The same kernel run interpreted (a cold cache) does not hold the GIL
through the call, so in Python :func:`exclusive` returns a private copy instead.

Both are plain functions in Python (what the interpreted kernels run); compiled code calls their
numba overloads, registered by :func:`install` when the registry first imports numba.
"""

from __future__ import annotations

import threading
from typing import Any

_INSTALLED = False
_LOCK = threading.Lock()


def borrowed(a: Any) -> Any:
    """``a`` unchanged (see the module docstring for what compiled kernels get)."""
    return a


def exclusive(a: Any) -> Any:
    """A private copy of ``a`` (see the module docstring for what compiled kernels get)."""
    return a.copy()


def install() -> None:
    """Register the compiled form of :func:`borrowed` with numba (once; imports numba)."""
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return
        from numba.core import types
        from numba.extending import intrinsic, overload

        @intrinsic
        def without_owner(typingctx: Any, arr: Any) -> Any:
            if not isinstance(arr, types.Array):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                src = context.make_array(sig.args[0])(context, builder, value=args[0])
                dst = context.make_array(sig.return_type)(context, builder)
                # the same data, shape and strides; no meminfo (so no counting) and no parent
                context.populate_array(dst, data=src.data, shape=src.shape, strides=src.strides,
                                       itemsize=src.itemsize, meminfo=None)
                return dst._getvalue()

            return arr(arr), codegen

        @overload(borrowed, inline="always")
        def borrowed_compiled(a):  # unannotated: numba compares it with borrowed's signature, annotations included
            if isinstance(a, types.Array):
                # numba supplies the typing context itself: the compiled call takes the array alone
                return lambda a: without_owner(a)  # type: ignore[call-arg]
            return None

        @overload(exclusive, inline="always")
        def exclusive_compiled(a):  # unannotated, as borrowed_compiled
            if isinstance(a, types.Array):
                return lambda a: a
            return None

        _INSTALLED = True


__all__ = ["borrowed", "exclusive", "install"]
