"""Running a test's worker in several threads at once."""

import threading


def run_threads(work, n: int) -> None:
    """`work(i)` for i in range(n), each in a thread of its own, all started before any is
    joined; returns when every one has finished."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
