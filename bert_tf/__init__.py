"""bert_tf: Google's BERT rebuilt on TensorFlow 2 and Keras 3.

From Python (`bert_tf.api`; imported on first use, so `import bert_tf`
stays cheap): `bert_tf.load(path)` (`.predict`, `.embed`, `.fill_mask`) and
`bert_tf.finetune(task, base_dir, output_dir, train=..., dev=...)`.
"""

__version__ = "0.1.0"

# Names served by bert_tf.api, loaded lazily (it imports TensorFlow).
_API_NAMES = ("load", "finetune")


def __getattr__(name):
    if name in _API_NAMES:
        from bert_tf import api
        return getattr(api, name)
    raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API_NAMES))
