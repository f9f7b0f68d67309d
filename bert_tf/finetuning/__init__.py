"""The fine-tuning core every task's recipe shares, without flags.

`core`: the configs (`RunConfig`, `FineTuningConfig`; each field a flag
of its program, `fields.setting`), set-up (`start`), steps, the trainer
and the phases (`run_phases`). `checks`: the checks of settings and inputs,
each message naming the flag. `runtime`: the strategy, seed, `TrainerConfig`
and optimizer of a config. `lock`: a training run's hold on its
`--output_dir`. `run_description`: what a training run leaves for
prediction (`bert_tf_run.json`, `bert_config.json`, `vocab.txt`).

Nothing here imports absl flags or `bert_tf.runners`: the programs' flags
are made from these configs (`bert_tf.runners.flags.define_config_flags`).
"""

# The names a recipe uses, as `finetuning.<name>`.
from bert_tf.finetuning.core import bilstm_setting
from bert_tf.finetuning.core import bilstm_units_setting
from bert_tf.finetuning.core import bilstm_units
from bert_tf.finetuning.core import RunConfig
from bert_tf.finetuning.core import FineTuningConfig
from bert_tf.finetuning.core import check_field_types
from bert_tf.finetuning.core import load_bert_config
from bert_tf.finetuning.core import num_training_steps
from bert_tf.finetuning.core import TrainingSteps
from bert_tf.finetuning.core import training_steps
from bert_tf.finetuning.core import FineTuningRun
from bert_tf.finetuning.core import start
from bert_tf.finetuning.core import arrays_data_config
from bert_tf.finetuning.core import make_trainer
from bert_tf.finetuning.core import phase_file_setting
from bert_tf.finetuning.core import phase_input_file
from bert_tf.finetuning.core import run_phases
from bert_tf.finetuning.fields import setting
from bert_tf.finetuning.checks import check_given_examples
from bert_tf.finetuning.lock import releases_output_dir
from bert_tf.finetuning.run_description import check_finished_run_matches
from bert_tf.finetuning.run_description import RUN_DESCRIPTION_FILE
from bert_tf.finetuning.run_description import BERT_CONFIG_FILE
from bert_tf.finetuning.run_description import VOCAB_FILE
from bert_tf.finetuning.run_description import CLASSIFICATION
from bert_tf.finetuning.run_description import MULTI_LABEL
from bert_tf.finetuning.run_description import SQUAD
from bert_tf.finetuning.run_description import TAGGING
from bert_tf.finetuning.run_description import MULTIPLE_CHOICE
from bert_tf.finetuning.run_description import TASK_KINDS
from bert_tf.finetuning.run_description import write_run_description
from bert_tf.finetuning.run_description import copy_model_files
from bert_tf.finetuning.run_description import read_run_description
from bert_tf.finetuning.run_description import read_multi_label_head
