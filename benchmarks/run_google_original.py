"""Runs one of Google's original TF1 scripts, unmodified, on TensorFlow 2.

Google's `google-research/bert` scripts (`create_pretraining_data.py` and
the `tokenization.py` it imports) were written for TensorFlow 1: they do
`import tensorflow as tf` and call `tf.flags`, `tf.logging`, `tf.gfile`,
`tf.python_io`, `tf.app`, which TensorFlow 2 keeps under
`tf.compat.v1`. This shim makes `import tensorflow` give them
`tensorflow.compat.v1` (graph mode), puts the script's directory first on
the import path (for its `tokenization`), and runs the script as
`__main__` with the remaining command line. Nothing of Google's code is
copied: the benchmark points this at a checkout of google-research/bert.

    python benchmarks/run_google_original.py \\
        PATH/TO/google-research-bert/create_pretraining_data.py --flags...
"""

import os
import runpy
import sys

# Before TensorFlow is imported: its C++ INFO lines are not results.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    if len(sys.argv) < 2 or not sys.argv[1].endswith(".py"):
        sys.exit("usage: run_google_original.py SCRIPT.py [flags...]")
    script = os.path.abspath(sys.argv[1])
    if not os.path.isfile(script):
        sys.exit(f"run_google_original.py: error: no script {script}")
    import tensorflow.compat.v1 as tf_v1
    tf_v1.disable_v2_behavior()
    sys.modules["tensorflow"] = tf_v1
    sys.path.insert(0, os.path.dirname(script))
    sys.argv = [script] + sys.argv[2:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
