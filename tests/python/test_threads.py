"""Several Python threads running one session at once (the GIL is released
during run): each gets the outputs a single-threaded run gives."""
import threading

import numpy as np
import onnxfuse
from conftest import read_tensor

THREADS = 4


def run_in_threads(work):
    """Calls work(t) on THREADS threads started together; returns their results, re-raising a failure."""
    results, errors = [None] * THREADS, []
    start = threading.Barrier(THREADS)

    def body(t):
        try:
            start.wait()
            results[t] = work(t)
        except Exception as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def test_mixed_batches_from_four_threads(symbolic_model):
    session = onnxfuse.InferenceSession(symbolic_model[0], threads=1)
    rng = np.random.default_rng(3)
    inputs = [[rng.standard_normal((1 + (t + r) % 3 * 3, 4)).astype(np.float32) for r in range(50)]
              for t in range(THREADS)]
    alone = [[session.run(None, {"x": x})[0] for x in runs] for runs in inputs]
    together = run_in_threads(lambda t: [session.run(None, {"x": x})[0] for x in inputs[t]])
    for t in range(THREADS):
        for a, b in zip(alone[t], together[t]):
            np.testing.assert_array_equal(a, b)


def test_resnet18_from_four_threads(resnet18):
    model, data = resnet18
    image = read_tensor(data / "input_0.pb")
    images = [image * (1.0 - 0.2 * t) for t in range(THREADS)]  # each thread its own image
    session = onnxfuse.InferenceSession(model, threads=1)
    alone = [session.run(None, {"input": x})[0] for x in images]
    together = run_in_threads(lambda t: [session.run(None, {"input": images[t]})[0] for _ in range(4)])
    for t in range(THREADS):
        for out in together[t]:
            np.testing.assert_array_equal(out, alone[t])
    # Runs overlapped: a second instance of the schedule was made for a
    # concurrent call, which cannot happen while run holds the GIL.
    assert session.stats()["plan_instances"] >= 2
