"""A training run's prediction phase on inputs held in memory: what
`bert_tf.load(run).predict` runs, on any Keras backend.

A recipe predicts with `Trainer.run_predictions`: the trainer restores the
run's newest checkpoint, runs the task's model over the prediction set on
the backend's engine (`Trainer.predict`), and the task folds the outputs
into its state (`aggregate_predictions`), reduces it (`reduce_predictions`:
SQuAD's answers) and writes its files. `RunPrediction` is that phase for
feature arrays made in memory by the task's own Python conversions
(`bert_tf/tasks/<task>/python_api.py`'s `predictor`), returning the
state instead of writing files: `load(run).predict` gives the answers,
labels and probabilities of the runner's prediction files.
"""

from bert_tf import modes
from bert_tf.data import sequence_lengths


class RunPrediction:
    """A run's task and newest checkpoint, predicting feature arrays.

    Attributes:
      task: the run's `Task`, built for prediction (its sets empty).
      trainer: an evaluation-only `Trainer` of it on the run's directory.
    """

    def __init__(self, run, task, pad_to_multiple_of=(
            sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF)):
        """Restores the run's checkpoint into the task's model.

        Args:
          run: the loaded run (`bert_tf.api.FineTunedModel`: its `path`,
            `checkpoint`, `batch_size` and `max_seq_length`).
          task: the run's `Task`, without an `init_checkpoint`.
          pad_to_multiple_of: batches run at their longest input rounded
            up to a multiple of this (the programs' `--pad_to_multiple_of`
            and its default); None: at `run.max_seq_length`, as
            run_squad.py predicts by default.

        Raises:
          bert_tf.checkpoints.CheckpointError: the checkpoint lacks one of
            the model's variables or has it in another shape.
        """
        from bert_tf import checkpoints
        from bert_tf.training import trainer as trainer_lib
        self.task = task
        self.batch_size = run.batch_size
        config = trainer_lib.TrainerConfig(
            output_dir=run.path, eval_batch_size=run.batch_size,
            pad_to_multiple_of=(
                run.max_seq_length if pad_to_multiple_of is None
                else pad_to_multiple_of),
            max_eval_steps=None)
        # Evaluation only: no lock, nothing written; it restores the run's
        # newest `model.ckpt-<step>`, as the recipe predicting from its
        # --output_dir does.
        self.trainer = trainer_lib.Trainer(task, config)
        if self.trainer.restored_checkpoint is None:
            # A checkpoint not of the run's own naming (copied into the
            # directory): every variable, heads included, must be there.
            checkpoints.load_checkpoint(
                list(task.checkpoint_variables(self.trainer.model).values()),
                run.checkpoint, strict=True)

    def predict(self, arrays, initial_state=None):
        """The task's prediction state over `arrays`, reduced.

        Args:
          arrays: {feature: numpy array, one row per example}, as the task's
            prediction records would give them.
          initial_state: the state `aggregate_predictions` starts from
            (what the recipe passes: SQuAD's `SpanPredictions`).

        Returns:
          The state after every row was aggregated and
          `reduce_predictions` ran on it.
        """
        import tensorflow as tf
        num_rows = len(next(iter(arrays.values())))
        state = initial_state
        for outputs in self.trainer.predict(
                tf.data.Dataset.from_tensor_slices(arrays), self.batch_size,
                num_examples=num_rows):
            state = self.task.aggregate_predictions(state, outputs,
                                                    modes.PREDICT)
        self.task.reduce_predictions(state, modes.PREDICT)
        return state
