"""A cache prefetch hint for kernels: `prefetch(array, index)` starts loading the cache line of
`array`'s item `index` (in C order). It changes no result.

It is an LLVM intrinsic (`llvm.prefetch`) written as IR, so it lives in the fenced package; under
`BPE_WORKBENCH_PORTABLE=1` (decided at import) it is a function that does nothing.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from workbench.engine._native import portable
from workbench.engine._native.numba_config import njit


@intrinsic
def _llvm_prefetch(typingctx, array, index):
    """The trainer's word pass visits words in list order, scattered over the word table: asking
    for the next words while merging this one overlaps their cache misses (a third of the pass)."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, value=args[0]).data
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0"
        )
        address = builder.bitcast(builder.gep(data, [args[1]]), i8p)
        builder.call(fn, [address, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.none(array, index), codegen


@njit(inline="always")
def _no_prefetch(array, index):
    return None


prefetch = _no_prefetch if portable() else _llvm_prefetch
