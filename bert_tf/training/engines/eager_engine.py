"""Evaluation and prediction on a Keras backend without a training engine.

On PyTorch (`KERAS_BACKEND=torch`), and any other Keras backend but
TensorFlow and JAX, the trainer evaluates and predicts: `bert_tf.load(run)
.predict` and `--do_eval`/`--do_predict` from a run's checkpoint call the
task's model batch by batch, eagerly, as Keras runs it on that backend. The
numbers are the model's (Google's to float32 round-off); training needs
TensorFlow's or JAX's engine and is refused in one line.
"""

import keras

from bert_tf import backend
from bert_tf.training.engines import base

_NO_TRAINING = ("KERAS_BACKEND={name}: training runs on the tensorflow and "
                "jax backends ({name} evaluates and predicts)")


class EagerEngine(base.Engine):
    """Evaluates and predicts on one device, eagerly; see `base.Engine`."""

    def __init__(self, task, config, strategy):
        # A `tf.distribute` strategy does not reach this backend's devices:
        # one device, one process.
        del strategy
        super().__init__(task, config, None)

    def _dropout_generator(self, seed):
        return None

    def build(self, optimizer_factory=None):
        if optimizer_factory is not None:
            raise ValueError(_NO_TRAINING.format(name=backend.name()))
        super().build()

    def random_state(self):
        return {}

    def train_iterator(self, dataset_fn):
        raise ValueError(_NO_TRAINING.format(name=backend.name()))

    def train_steps(self, iterator, num_steps, stop_request):
        raise ValueError(_NO_TRAINING.format(name=backend.name()))

    def eval_input(self, dataset_fn, per_replica_batch_size):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        return dataset_fn(per_replica_batch_size,
                          tf.distribute.InputContext()).as_numpy_iterator()

    def eval_step(self, features, keep):
        task = self.task
        denominators = {key: keras.ops.cast(value, "float32") for key, value
                        in task.loss_denominators(features).items()}
        outputs = task.forward(self.model, features, training=False)
        loss, metrics = task.compute_loss(features, outputs, denominators)
        sums = {"loss": keras.ops.cast(loss, "float32")}
        sums.update({name: keras.ops.cast(metrics[name], "float32")
                     for name in task.metric_names})
        return _to_numpy(sums), _to_numpy(keep(features, outputs))

    def predict(self, predict_batch, examples, global_batch_size,
                pad_to_full_batches=False, num_examples=None,
                description="records"):
        # pylint: disable-next=import-outside-toplevel
        from bert_tf.training import prediction
        del pad_to_full_batches  # Every batch is padded to full already.
        return prediction.predict_one_device(
            lambda features: _to_numpy(predict_batch(features)), examples,
            global_batch_size, num_examples=num_examples,
            description=description)

    def compilation_in_words(self):
        return f"{backend.name()}, eager (evaluation and prediction only)"


def _to_numpy(tensors):
    """`{name: tensor}` as numpy arrays (detached from any autograd)."""
    return {name: keras.ops.convert_to_numpy(value)
            for name, value in tensors.items()}
