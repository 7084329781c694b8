"""A process's own peak memory, as the benchmarks report it (standard library only: both venvs run it)."""

from __future__ import annotations

import resource

__all__ = ('peak_rss_kb',)


def peak_rss_kb() -> int:
    """This process's own peak RSS (VmHWM), in KiB.

    Not `ru_maxrss`: on Linux that keeps the parent's high-water mark across a vfork + exec, so a
    small child of a big parent would report the parent's figure.
    """
    try:
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
