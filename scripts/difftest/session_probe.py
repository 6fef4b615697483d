"""Child process of the session check (session_check.py): runs one model
through two onnxfuse.InferenceSessions, one splitting every batch into passes
of one sample (max_samples_per_pass=1) at 2 threads, so that an even batch
runs two passes at once (each on one thread) and an odd one its passes one
after another on a team of two, and one never splitting (-1) at 1 thread, at
every batch of the inputs file, so that a crash of the library is a result of the
check rather than the end of the campaign.

    session_probe.py MODEL STRATEGY INPUTS.npz OUTPUTS.npz

INPUTS.npz holds "S|name" arrays per shape label S ("3", or "3xD5": batch 3
with the dim D at 5). OUTPUTS.npz gets "S|passes|i" and "S|whole|i" (output i
in model order); a shape either session refused or failed on gets "S|error"
(the exception's class name and message) instead.
Exit status 0 when it ran, 3 when onnxfuse cannot be imported or the model
not loaded (the error on stderr).
"""
import sys

import numpy as np


def main():
    model, strategy, inputs_path, outputs_path = sys.argv[1:5]
    try:
        import onnxfuse
        sessions = {mode: onnxfuse.InferenceSession(model, threads=threads, strategy=strategy,
                                                    max_samples_per_pass=limit)
                    for mode, threads, limit in (("passes", 2, 1), ("whole", 1, -1))}
    except Exception as e:  # no module, or a model the session does not load
        print("%s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3
    data = np.load(inputs_path)
    shapes = sorted({k.split("|")[0] for k in data.files})
    result = {}
    for at in shapes:
        feed = {k.split("|", 1)[1]: data[k] for k in data.files if k.startswith(at + "|")}
        try:
            for mode, session in sessions.items():
                for i, out in enumerate(session.run(None, feed)):
                    result["%s|%s|%d" % (at, mode, i)] = out
        except Exception as e:
            result["%s|error" % at] = np.array("%s: %s" % (type(e).__name__, str(e)[:300]))
    np.savez(outputs_path, **result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
