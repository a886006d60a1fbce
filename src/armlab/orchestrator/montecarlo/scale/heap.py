"""Give the C heap headroom, so numpy's per-step temporaries stop costing page faults.

Every engine step allocates and frees a few temporaries of shape ``(R, K)``.  glibc grows
its heap by just what a request needs and gives memory back at the top as soon as it is
free, so each step maps fresh pages and the kernel zero-fills them on first touch: on
the thresholding-bandits paper's experiments (250 replicas per worker, K = 100) about a third of the CPU time
went to the kernel.  A top pad makes every heap extension reserve ``pad`` bytes more, which
the next steps reuse; the step time of index policies there roughly halved (measured with
``MALLOC_TOP_PAD_``, which this sets from inside the process).  Other C libraries are left
alone.

The setting is global to the process (the C library's malloc), so armlab applies it only
in processes it owns: the ``armlab`` command at start-up and its worker processes, through
:func:`apply_heap_setting`.  There it is on by default; the environment variable
``ARMLAB_HEAP_HEADROOM=0`` turns it off (``1`` turns it on).  Constructing a simulation
never changes the host process: a program that uses armlab as a library and wants the
speed calls :func:`reserve_heap_headroom` itself.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping

from armlab.errors import ConfigError

__all__ = ["HEAP_ENV", "apply_heap_setting", "reserve_heap_headroom"]

_M_TOP_PAD = -2  # glibc's mallopt parameter number (malloc.h)
HEADROOM_BYTES = 16 * 2**20

#: The environment variable that switches the headroom in armlab's own processes.
HEAP_ENV = "ARMLAB_HEAP_HEADROOM"
_SWITCH = {"1": True, "on": True, "true": True, "yes": True, "0": False, "off": False, "false": False, "no": False}


def reserve_heap_headroom(pad: int = HEADROOM_BYTES) -> bool:
    """Ask glibc to grow the heap ``pad`` bytes beyond each request; False where not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_TOP_PAD, pad))


def apply_heap_setting(environ: Mapping[str, str] = os.environ) -> bool:
    """Reserve heap headroom unless ``ARMLAB_HEAP_HEADROOM`` turns it off; True if reserved.

    For processes armlab owns (the CLI, worker processes), called once at start-up.
    """
    value = environ.get(HEAP_ENV, "1")
    switch = _SWITCH.get(value.strip().lower())
    if switch is None:
        raise ConfigError(
            f"{HEAP_ENV}={value!r} is not understood: set it to 1 (reserve heap headroom) or 0 (leave malloc alone)"
        )
    return switch and reserve_heap_headroom()
