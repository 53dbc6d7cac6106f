"""One function run on several threads at once: the tests of fftconv's
thread safety (test_cpu.py, test_gpu.py)."""
import threading


def run_in_threads(work, count, timeout):
    """work(index) for index < count, each on its own thread, all at once;
    fails if a thread is still running after `timeout` seconds or raised."""
    failures = []

    def guarded(index):
        try:
            work(index)
        except Exception as error:  # noqa: BLE001 (reported below)
            failures.append(error)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    assert not failures, failures
