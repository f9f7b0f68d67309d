"""TF1 name-based checkpoints: resolve, read, load into Keras, save.

References are independent of bert_tf: checkpoints written by TF1's
`tf.compat.v1.train.Saver` (as Google's code writes them) and Google's own
`cased_tiny` checkpoint; what we write is read back by that Saver in a TF1
graph; outputs are compared with Model Garden's `BertEncoder` loaded through
Model Garden's own TF1 converter.
"""

import contextlib
import logging as python_logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.config import BertConfig
from modeling_harness import BERT_DROPOUT, tiny_bert_config
from modeling_harness import google_bert_shapes, random_tensors

HIDDEN = 32
INTERMEDIATE = 64


def write_with_tf1_saver(tensors, prefix):
    """Writes `tensors` as Google's code does: a TF1 graph and its Saver."""
    with tf.Graph().as_default():
        variables = [
            tf.compat.v1.get_variable(name, initializer=tf.constant(value))
            for name, value in tensors.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_meta_graph=False)
    return prefix


def restore_with_tf1_saver(shapes_and_dtypes, prefix):
    """Reads a checkpoint as Google's code does; returns name -> value."""
    with tf.Graph().as_default():
        variables = {
            name: tf.compat.v1.get_variable(name, shape=shape, dtype=dtype)
            for name, (shape, dtype) in shapes_and_dtypes.items()}
        saver = tf.compat.v1.train.Saver(list(variables.values()))
        with tf.compat.v1.Session() as session:
            saver.restore(session, prefix)
            return session.run(variables)


def keras_variables(shapes, dtype="float32"):
    """Keras 3 variables whose `.path` is each Google name."""
    variables = []
    for name, shape in shapes.items():
        *scopes, leaf = name.split("/")
        with contextlib.ExitStack() as stack:
            for scope in scopes:
                stack.enter_context(keras.name_scope(scope))
            variables.append(keras.Variable(
                np.zeros(shape, np.float32), dtype=dtype, name=leaf))
    return variables


def touch(path):
    with open(path, "wb") as writer:
        writer.write(b"")


# --- resolve_checkpoint ----------------------------------------------------

def test_resolve_prefix_and_its_files(tmp_path):
    touch(tmp_path / "model.ckpt-7.index")
    prefix = str(tmp_path / "model.ckpt-7")
    assert checkpoints.resolve_checkpoint(prefix) == prefix
    assert checkpoints.resolve_checkpoint(prefix + ".index") == prefix
    assert checkpoints.resolve_checkpoint(
        prefix + ".data-00000-of-00001") == prefix


def test_resolve_released_directory_without_state_file(cased_tiny_dir):
    assert not (cased_tiny_dir / "checkpoint").exists()
    assert checkpoints.resolve_checkpoint(cased_tiny_dir) == str(
        cased_tiny_dir / "bert_model.ckpt")


def test_resolve_prefers_bert_model_ckpt(tmp_path):
    for name in ("bert_model.ckpt", "zz.ckpt", "aa.ckpt"):
        touch(tmp_path / f"{name}.index")
    assert checkpoints.resolve_checkpoint(tmp_path) == str(
        tmp_path / "bert_model.ckpt")


def test_resolve_several_candidates_lists_them(tmp_path):
    touch(tmp_path / "model.ckpt-100.index")
    touch(tmp_path / "model.ckpt-200.index")
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.resolve_checkpoint(tmp_path)
    message = str(error.value)
    assert str(tmp_path) in message
    assert "model.ckpt-100" in message and "model.ckpt-200" in message


def test_resolve_state_file_directory(tmp_path):
    touch(tmp_path / "model.ckpt-100.index")
    touch(tmp_path / "model.ckpt-200.index")
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-100"\n'
        'all_model_checkpoint_paths: "model.ckpt-100"\n')
    assert checkpoints.resolve_checkpoint(tmp_path) == str(
        tmp_path / "model.ckpt-100")


def test_resolve_state_file_of_a_moved_directory(tmp_path):
    # Absolute paths recorded elsewhere: tf.train.latest_checkpoint gives None.
    touch(tmp_path / "model.ckpt-5.index")
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "/elsewhere/run/model.ckpt-5"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert checkpoints.resolve_checkpoint(tmp_path) == str(
        tmp_path / "model.ckpt-5")


def test_resolve_state_file_pointing_nowhere(tmp_path):
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "gone"\n')
    with pytest.raises(checkpoints.CheckpointNotFoundError,
                       match=r"checkpoint state file .*checkpoint points to "
                             r".*gone, but .*gone\.index does not exist"):
        checkpoints.resolve_checkpoint(tmp_path)


def test_resolve_missing_path_names_it(tmp_path):
    missing = tmp_path / "no_such_model" / "bert_model.ckpt"
    with pytest.raises(checkpoints.CheckpointNotFoundError) as error:
        checkpoints.resolve_checkpoint(missing)
    assert f"no checkpoint at {missing}" in str(error.value)
    assert isinstance(error.value, FileNotFoundError)


def test_resolve_wrong_prefix_lists_neighbours(tmp_path):
    touch(tmp_path / "bert_model.ckpt.index")
    with pytest.raises(checkpoints.CheckpointNotFoundError,
                       match=r"checkpoints in .*: bert_model\.ckpt"):
        checkpoints.resolve_checkpoint(tmp_path / "bert_model")


def test_resolve_directory_without_checkpoint(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    with pytest.raises(checkpoints.CheckpointNotFoundError,
                       match=f"no checkpoint in directory {tmp_path}"):
        checkpoints.resolve_checkpoint(tmp_path)


# --- reading ---------------------------------------------------------------

def test_read_and_shapes_of_a_tf1_saver_checkpoint(tmp_path):
    tensors = random_tensors(google_bert_shapes())
    tensors["global_step"] = np.int64(1234)
    prefix = write_with_tf1_saver(tensors, str(tmp_path / "model.ckpt"))

    shapes = checkpoints.checkpoint_shapes(tmp_path)
    assert shapes == {name: np.shape(value) for name, value in tensors.items()}
    read = checkpoints.read_checkpoint(prefix)
    assert sorted(read) == sorted(tensors)
    for name, value in tensors.items():
        np.testing.assert_array_equal(read[name], value, err_msg=name)
        assert read[name].dtype == np.asarray(value).dtype


def test_unreadable_checkpoint_names_it(tmp_path):
    (tmp_path / "bert_model.ckpt.index").write_bytes(b"not a checkpoint")
    with pytest.raises(checkpoints.CheckpointError,
                       match="cannot read checkpoint .*bert_model.ckpt"):
        checkpoints.read_checkpoint(tmp_path)


# --- saving ----------------------------------------------------------------

def test_save_is_read_by_tf1_saver_and_load_checkpoint(tmp_path):
    tensors = random_tensors(google_bert_shapes())
    tensors["global_step"] = np.int64(99)
    tensors["half"] = np.arange(6, dtype=np.float16).reshape(2, 3)
    prefix = str(tmp_path / "out" / "bert_model.ckpt")
    assert checkpoints.save_checkpoint(tensors, prefix) == prefix

    assert sorted(os.listdir(tmp_path / "out")) == [
        "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index",
        "checkpoint"]
    assert tf.train.latest_checkpoint(str(tmp_path / "out")) == prefix
    restored = restore_with_tf1_saver(
        {name: (np.shape(value), tf.as_dtype(np.asarray(value).dtype))
         for name, value in tensors.items()}, prefix)
    reader = tf.train.load_checkpoint(prefix)
    for name, value in tensors.items():
        np.testing.assert_array_equal(restored[name], value, err_msg=name)
        read = reader.get_tensor(name)
        assert read.dtype == np.asarray(value).dtype
        assert read.tobytes() == np.asarray(value).tobytes(), name


def test_save_keras_variables_also_distributed(tmp_path):
    shapes = {"bert/pooler/dense/kernel": (3, 3),
              "bert/pooler/dense/bias": (3,)}
    values = random_tensors(shapes)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        variables = keras_variables(shapes)
    for variable in variables:
        variable.assign(values[variable.path])
    prefix = str(tmp_path / "model.ckpt")
    checkpoints.save_checkpoint({v.path: v for v in variables}, prefix)
    read = tf.train.load_checkpoint(prefix)
    for name, value in values.items():
        np.testing.assert_array_equal(read.get_tensor(name), value)


def test_save_leaves_no_temporary_files_and_updates_state(tmp_path):
    first = str(tmp_path / "model.ckpt-1")
    second = str(tmp_path / "model.ckpt-2")
    checkpoints.save_checkpoint({"a": np.ones(2, np.float32)}, first)
    checkpoints.save_checkpoint({"a": np.zeros(2, np.float32)}, second)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == second
    assert list(state.all_model_checkpoint_paths) == [first, second]
    assert not [n for n in os.listdir(tmp_path) if "tmp" in n]
    # Relative paths: the directory can be moved.
    assert str(tmp_path) not in (tmp_path / "checkpoint").read_text()


def test_save_overwrite_replaces_atomically(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    checkpoints.save_checkpoint({"a": np.ones(2, np.float32)}, prefix)
    checkpoints.save_checkpoint({"b": np.zeros(3, np.float32)}, prefix)
    assert checkpoints.checkpoint_shapes(prefix) == {"b": (3,)}
    with pytest.raises(checkpoints.CheckpointError,
                       match=f"checkpoint {prefix} already exists"):
        checkpoints.save_checkpoint({"c": np.ones(1, np.float32)}, prefix,
                                    overwrite=False)
    assert checkpoints.checkpoint_shapes(prefix) == {"b": (3,)}


def test_save_failure_keeps_the_old_checkpoint(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    checkpoints.save_checkpoint({"a": np.ones(2, np.float32)}, prefix)
    with pytest.raises(checkpoints.CheckpointError,
                       match="cannot save tensor b: object"):
        checkpoints.save_checkpoint(
            {"a": np.ones(2, np.float32), "b": object()}, prefix)
    np.testing.assert_array_equal(
        checkpoints.read_checkpoint(prefix)["a"], np.ones(2))
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt.data-00000-of-00001", "model.ckpt.index"]


def test_crash_while_publishing_never_leaves_a_half_checkpoint(tmp_path,
                                                               monkeypatch):
    prefix = str(tmp_path / "model.ckpt")
    checkpoints.save_checkpoint({"a": np.ones(2, np.float32)}, prefix)
    rename = tf.io.gfile.rename

    def crash_on_index(source, target, overwrite=False):
        if target.endswith(".index"):
            raise OSError("disk full")
        return rename(source, target, overwrite=overwrite)

    monkeypatch.setattr(tf.io.gfile, "rename", crash_on_index)
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.save_checkpoint({"b": np.zeros(3, np.float32)}, prefix)
    monkeypatch.undo()
    message = str(error.value)
    assert f"writing checkpoint {prefix} failed after the old one" in message
    # The real name holds no checkpoint (not a half-written one)...
    with pytest.raises(checkpoints.CheckpointNotFoundError):
        checkpoints.resolve_checkpoint(prefix)
    # ...and the new values are kept under the temporary prefix.
    temporary = message.split("left at ")[1].split(": ")[0]
    np.testing.assert_array_equal(
        checkpoints.read_checkpoint(temporary)["b"], np.zeros(3))

    # A first save that crashes leaves nothing behind.
    fresh = tmp_path / "fresh"
    monkeypatch.setattr(tf.io.gfile, "rename", crash_on_index)
    with pytest.raises(OSError, match="disk full"):
        checkpoints.save_checkpoint({"c": np.ones(1, np.float32)},
                                    str(fresh / "model.ckpt"))
    monkeypatch.undo()
    assert os.listdir(fresh) == []


def test_save_refuses_the_checkpoint_being_read(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    checkpoints.save_checkpoint({"a": np.ones(2, np.float32)}, prefix)
    with checkpoints.open_checkpoint(tmp_path) as source:
        with pytest.raises(checkpoints.CheckpointError,
                           match=f"refusing to overwrite checkpoint {prefix}: "
                                 f"it is being read"):
            checkpoints.save_checkpoint(source, prefix)
        # Another prefix is fine, even from the open mapping.
        checkpoints.save_checkpoint(source, str(tmp_path / "copy.ckpt"))
    with pytest.raises(checkpoints.CheckpointError,
                       match="it is the source the values were read from"):
        checkpoints.save_checkpoint(
            checkpoints.read_checkpoint(prefix), prefix,
            source=prefix + ".index")
    # Closed: saving onto it is allowed again.
    checkpoints.save_checkpoint({"a": np.zeros(2, np.float32)}, prefix)


# --- loading into Keras variables -------------------------------------------

@pytest.fixture(scope="module")
def pretraining_checkpoint(tmp_path_factory):
    """A Google pretraining checkpoint written by TF1's Saver: the model,
    its heads, Adam slots and global_step."""
    tensors = random_tensors(google_bert_shapes())
    for name in list(tensors):
        tensors[f"{name}/adam_m"] = np.zeros_like(tensors[name])
        tensors[f"{name}/adam_v"] = np.zeros_like(tensors[name])
    tensors["global_step"] = np.int64(10)
    prefix = write_with_tf1_saver(
        tensors, str(tmp_path_factory.mktemp("pretraining") / "model.ckpt-10"))
    return prefix, tensors


def test_load_encoder_only_from_pretraining_checkpoint(pretraining_checkpoint,
                                                       caplog):
    prefix, tensors = pretraining_checkpoint
    encoder_shapes = google_bert_shapes(heads=False)
    variables = keras_variables(encoder_shapes)
    with caplog.at_level(python_logging.INFO):
        report = checkpoints.load_checkpoint(variables, prefix)
    assert sorted(report.loaded) == sorted(encoder_shapes)
    assert report.checkpoint == prefix
    for variable in variables:
        np.testing.assert_array_equal(variable.numpy(), tensors[variable.path])
    assert "global_step" in report.unused
    assert "cls/predictions/output_bias" in report.unused
    assert len(report.unused) == len(tensors) - len(encoder_shapes)
    unused_lines = [r.getMessage() for r in caplog.records
                    if "not used by the model" in r.getMessage()]
    assert len(unused_lines) == 1
    assert "optimizer slots" in unused_lines[0]
    assert "global_step" in unused_lines[0]
    assert "cls/seq_relationship/output_weights" in unused_lines[0]


def test_two_load_passes_report_one_summary_line(pretraining_checkpoint,
                                                 caplog):
    """A task's encoder pass and heads pass: one line, by kind."""
    prefix, tensors = pretraining_checkpoint
    all_shapes = google_bert_shapes(heads=True)
    encoder = keras_variables(google_bert_shapes(heads=False))
    head_shapes = {k: v for k, v in all_shapes.items()
                   if k.startswith("cls/")}
    heads = keras_variables({**head_shapes, "cls/squad/output_bias": (2,)})
    with caplog.at_level(python_logging.INFO):
        with checkpoints.load_summary():
            checkpoints.load_checkpoint(encoder, prefix, strict=True)
            checkpoints.load_checkpoint(heads, prefix, strict=False)
    lines = [r.getMessage() for r in caplog.records
             if prefix in r.getMessage() and "variables" in r.getMessage()]
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"Loaded {len(all_shapes)} variables from "
                           f"{prefix}; not used by the model: ")
    # What neither pass used: the slots of every variable, global_step.
    assert f"{2 * len(all_shapes)} optimizer slots" in line
    assert "global_step" in line
    assert "head tensors" not in line  # the heads pass loaded them
    assert line.endswith("; not in the checkpoint (initialized afresh): "
                         "cls/squad/output_bias.")


def test_load_casts_to_the_variable_dtype(pretraining_checkpoint):
    prefix, tensors = pretraining_checkpoint
    name = "bert/encoder/layer_1/output/dense/kernel"
    [variable] = keras_variables({name: tensors[name].shape}, dtype="bfloat16")
    checkpoints.load_checkpoint([variable], prefix)
    assert variable.dtype == "bfloat16"
    expected = tf.cast(tensors[name], tf.bfloat16).numpy()
    np.testing.assert_array_equal(variable.numpy(), expected)


def test_load_under_a_distribution_strategy(pretraining_checkpoint):
    prefix, tensors = pretraining_checkpoint
    name = "bert/pooler/dense/kernel"
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        [variable] = keras_variables({name: (HIDDEN, HIDDEN)})
        checkpoints.load_checkpoint([variable], prefix)
    np.testing.assert_array_equal(variable.numpy(), tensors[name])


def test_load_vocab_mismatch_and_missing_tensor_in_one_error(
        pretraining_checkpoint):
    prefix, _ = pretraining_checkpoint
    shapes = google_bert_shapes(vocab_size=2000, heads=False)
    shapes["bert/encoder/layer_2/output/dense/bias"] = (HIDDEN,)
    variables = keras_variables(shapes)
    before = {v.path: v.numpy() for v in variables}
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.load_checkpoint(variables, prefix)
    message = str(error.value)
    assert f"checkpoint {prefix} does not fit the model" in message
    assert ("bert/embeddings/word_embeddings: model [2000, 32] vs checkpoint "
            "[100, 32]") in message
    assert ("bert/encoder/layer_2/output/dense/bias: model [32], missing "
            "from the checkpoint") in message
    assert ("vocab_size in bert_config.json (2000) does not fit the "
            "checkpoint") in message
    # Nothing was assigned.
    for variable in variables:
        np.testing.assert_array_equal(variable.numpy(), before[variable.path])


def test_load_float_variable_from_integer_tensor_is_an_error(
        pretraining_checkpoint):
    prefix, _ = pretraining_checkpoint
    variables = keras_variables({"global_step": ()})
    with pytest.raises(checkpoints.CheckpointError,
                       match="global_step: model dtype float32 vs checkpoint "
                             "dtype int64"):
        checkpoints.load_checkpoint(variables, prefix)


def test_load_non_strict_reports_and_loads_the_rest(pretraining_checkpoint):
    prefix, tensors = pretraining_checkpoint
    variables = keras_variables({
        "bert/pooler/dense/bias": (HIDDEN,),
        "bert/pooler/dense/kernel": (HIDDEN, 7),
        "new_head/kernel": (3,)})
    report = checkpoints.load_checkpoint(variables, prefix, strict=False)
    assert report.loaded == ["bert/pooler/dense/bias"]
    assert report.mismatched == ["bert/pooler/dense/kernel"]
    assert report.missing == ["new_head/kernel"]
    np.testing.assert_array_equal(variables[0].numpy(),
                                  tensors["bert/pooler/dense/bias"])
    np.testing.assert_array_equal(variables[2].numpy(), np.zeros(3))


def test_load_into_an_unbuilt_model_says_to_build_it(pretraining_checkpoint):
    prefix, _ = pretraining_checkpoint

    class Unbuilt(keras.Model):
        def __init__(self):
            super().__init__(name="unbuilt")
            self.dense = keras.layers.Dense(3)

        def call(self, inputs):
            return self.dense(inputs)

    with pytest.raises(checkpoints.CheckpointError,
                       match="model 'unbuilt' is not built yet.*call it once "
                             "on inputs"):
        checkpoints.load_checkpoint(Unbuilt(), prefix)
    with pytest.raises(checkpoints.CheckpointError,
                       match="has no variables: build the model"):
        checkpoints.load_checkpoint([], prefix)


def test_load_missing_checkpoint_names_path(tmp_path):
    variables = keras_variables({"a": (1,)})
    with pytest.raises(checkpoints.CheckpointNotFoundError,
                       match=f"no checkpoint at {tmp_path / 'nope'}"):
        checkpoints.load_checkpoint(variables, tmp_path / "nope")


def test_save_then_load_is_bit_identical(tmp_path):
    shapes = google_bert_shapes()
    source = keras_variables(shapes)
    values = random_tensors(shapes, seed=3)
    for variable in source:
        variable.assign(values[variable.path])
    prefix = str(tmp_path / "bert_model.ckpt")
    checkpoints.save_checkpoint({v.path: v for v in source}, prefix)
    target = keras_variables(shapes)
    checkpoints.load_checkpoint(target, tmp_path)
    for variable in target:
        assert variable.numpy().tobytes() == values[variable.path].tobytes()


def test_variable_name_of_tf_variables():
    with tf.Graph().as_default():
        variable = tf.compat.v1.get_variable("bert/pooler/dense/bias", [2])
    assert checkpoints.variable_name(variable) == "bert/pooler/dense/bias"


def test_load_golden_google_checkpoint_into_keras_variables(cased_tiny_dir):
    config = BertConfig.from_json_file(cased_tiny_dir / "bert_config.json")
    shapes = google_bert_shapes(
        vocab_size=config.vocab_size, hidden=config.hidden_size,
        layers=config.num_hidden_layers,
        intermediate=config.intermediate_size,
        positions=config.max_position_embeddings,
        types=config.type_vocab_size)
    variables = keras_variables(shapes)
    report = checkpoints.load_checkpoint(variables, cased_tiny_dir)
    assert report.unused == []
    reader = tf.train.load_checkpoint(
        str(cased_tiny_dir / "bert_model.ckpt"))
    for variable in variables:
        np.testing.assert_array_equal(variable.numpy(),
                                      reader.get_tensor(variable.path))


# --- BertModel against Model Garden's encoder --------------------------------

def model_garden_encoder(prefix, config, tmp_path):
    """Model Garden's BertEncoder loaded through Model Garden's own TF1->TF2
    checkpoint converter, with Google's tanh-approximate gelu."""
    import tf_keras
    from official.nlp.modeling import networks
    from official.nlp.tools import tf1_bert_checkpoint_converter_lib as lib

    renamed = str(tmp_path / "model_garden_v1" / "ckpt")
    lib.convert(prefix, renamed, num_heads=config.num_attention_heads,
                name_replacements=lib.BERT_V2_NAME_REPLACEMENTS,
                permutations=lib.BERT_V2_PERMUTATIONS,
                exclude_patterns=["adam", "Adam"])
    encoder = networks.BertEncoder(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        inner_dim=config.intermediate_size,
        inner_activation=lambda x: tf_keras.activations.gelu(
            x, approximate=True),
        dict_outputs=True)
    # Loads the renamed checkpoint into the encoder (asserting every encoder
    # variable matched) and writes Model Garden's object-based checkpoint.
    lib.create_v2_checkpoint(encoder, renamed,
                             str(tmp_path / "model_garden_v2" / "ckpt"),
                             checkpoint_model_name="encoder")
    return encoder


def test_bert_model_matches_model_garden_encoder(tmp_path):
    from bert_tf.modeling import BertModel, MaskedLMHead, NextSentenceHead

    config = tiny_bert_config(hidden_size=HIDDEN,
                              intermediate_size=INTERMEDIATE, **BERT_DROPOUT)
    tensors = random_tensors(google_bert_shapes(), seed=7, scale=0.2)
    for name in list(tensors):
        tensors[f"{name}/adam_m"] = np.zeros_like(tensors[name])
    tensors["global_step"] = np.int64(3)
    prefix = checkpoints.save_checkpoint(
        tensors, str(tmp_path / "google" / "bert_model.ckpt"))

    rng = np.random.default_rng(1)
    input_ids = rng.integers(1, 100, size=(2, 12)).astype(np.int32)
    input_mask = np.ones_like(input_ids)
    input_mask[1, 7:] = 0
    input_ids[1, 7:] = 0
    segment_ids = np.zeros_like(input_ids)
    segment_ids[:, 5:] = 1

    model = BertModel(config)
    model.build()
    report = checkpoints.load_checkpoint(model, tmp_path / "google")
    assert sorted(report.loaded) == sorted(google_bert_shapes(heads=False))
    ours = model(input_ids, input_mask, segment_ids)

    reference = model_garden_encoder(prefix, config, tmp_path)(dict(
        input_word_ids=input_ids, input_mask=input_mask,
        input_type_ids=segment_ids))
    np.testing.assert_allclose(ours["sequence_output"],
                               reference["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(ours["pooled_output"],
                               reference["pooled_output"], atol=1e-5)
    for layer, (mine, theirs) in enumerate(zip(ours["encoder_outputs"],
                                               reference["encoder_outputs"])):
        np.testing.assert_allclose(mine, theirs, atol=1e-5,
                                   err_msg=f"layer {layer}")

    # The heads load from the same pretraining checkpoint, all of it used
    # but the optimizer state.
    masked_lm = MaskedLMHead(config, model.embedding_table)
    next_sentence = NextSentenceHead(config)
    masked_lm(ours["sequence_output"], np.zeros((2, 3), np.int32))
    next_sentence(ours["pooled_output"])
    head_report = checkpoints.load_checkpoint(
        masked_lm.weights + next_sentence.weights, prefix)
    assert sorted(head_report.loaded) == sorted(
        n for n in google_bert_shapes() if n.startswith("cls/"))
    for variable in masked_lm.weights + next_sentence.weights:
        np.testing.assert_array_equal(variable.numpy(),
                                      tensors[variable.path])


def test_bert_model_config_not_fitting_checkpoint(cased_tiny_dir):
    from bert_tf.modeling import BertModel

    config = BertConfig.from_json_file(cased_tiny_dir / "bert_config.json")
    model = BertModel(config.replace(vocab_size=100))
    with pytest.raises(checkpoints.CheckpointError,
                       match="model 'bert' is not built yet"):
        checkpoints.load_checkpoint(model, cased_tiny_dir)
    model.build()
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.load_checkpoint(model, cased_tiny_dir)
    message = str(error.value)
    assert str(cased_tiny_dir / "bert_model.ckpt") in message
    assert ("bert/embeddings/word_embeddings: model [100, 32] vs checkpoint "
            "[2000, 32]") in message
    assert "vocab_size in bert_config.json (100) does not fit" in message
