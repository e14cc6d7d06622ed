"""Training from Python against `clformer train`: the same options give the
same steps and the same checkpoint bit for bit (a language model, and a
translation model from in-memory sentence pairs), validation comes with its
step, a run resumes where it stopped, and bad options are refused."""
from __future__ import annotations

import pytest

import clformer
from conftest import (LM_OPTIONS, LM_SHAPE, MT_OPTIONS, MT_SHAPE, log_losses, run_cli,
                      same_checkpoint, shape_of_log_loss)


def test_lm_run_is_the_commands_step_for_step(data, tmp_path):
    run_cli("train", *LM_SHAPE, "--text", data / "text.txt", "--steps", "8", "--eval-every",
            "4", "--seed", "5", "--save", tmp_path / "cli.safetensors", "--log",
            tmp_path / "cli.jsonl")
    trainer = clformer.Trainer(LM_OPTIONS, text=data / "text.txt", steps=8, eval_every=4,
                               seed=5, save=tmp_path / "py.safetensors", log=tmp_path / "py.jsonl")
    steps = list(trainer)
    assert [s.step for s in steps] == list(range(1, 9))
    assert [shape_of_log_loss(s.loss) for s in steps] == log_losses(tmp_path / "cli.jsonl")
    assert [s.validation is not None for s in steps] == [i in (4, 8) for i in range(1, 9)]
    assert steps[-1].last and trainer.result.saved_to == str(tmp_path / "py.safetensors")
    assert same_checkpoint(tmp_path / "cli.safetensors", tmp_path / "py.safetensors")
    assert isinstance(trainer.model, clformer.LanguageModel)
    assert trainer.model.step == 8
    trainer.close()


def test_translation_from_lists_is_the_commands(data, tmp_path):
    run_cli("train", *MT_SHAPE, "--src", data / "train.src", "--tgt", data / "train.tgt",
            "--steps", "6", "--save", tmp_path / "cli.safetensors")
    src = (data / "train.src").read_text().splitlines()
    tgt = (data / "train.tgt").read_text().splitlines()
    seen = []
    with clformer.Trainer(MT_OPTIONS, src=src, tgt=tgt, steps=6,
                          save=tmp_path / "py.safetensors") as trainer:
        result = trainer.run(lambda step: seen.append(step.step))
        assert seen == list(range(1, 7)) and result.steps == 6
        assert isinstance(trainer.model, clformer.Translator)
    assert same_checkpoint(tmp_path / "cli.safetensors", tmp_path / "py.safetensors")


def test_resume_continues_the_run(data, tmp_path):
    options = dict(LM_OPTIONS, text=data / "text.txt", save=tmp_path / "m.safetensors")
    straight = [s.loss for s in clformer.Trainer(options, steps=6,
                                                 save=tmp_path / "straight.safetensors")]
    with clformer.Trainer(options, steps=6) as trainer:
        first = [next(trainer).loss for _ in range(3)]
        trainer.finish()  # ends the run where it is: validated and saved at step 3
        assert trainer.result.steps == 3
    rest = [s.loss for s in clformer.Trainer(options, steps=6, resume=tmp_path / "m.safetensors")]
    assert first + rest == straight


def test_callback_stops_the_run(data):
    with clformer.Trainer(LM_OPTIONS, text=data / "text.txt", steps=50) as trainer:
        result = trainer.run(lambda step: step.step < 3)
        assert result.steps == 3 and not result.stopped


def test_bad_options_are_refused(data):
    with pytest.raises(TypeError, match="unknown training option.*stepz"):
        clformer.Trainer(task="lm", text=data / "text.txt", stepz=3)
    with pytest.raises(clformer.InvalidArgumentError, match="gpt-mini"):
        clformer.Trainer(task="lm", text=data / "text.txt", steps=3, config="small")
    with pytest.raises(ValueError, match="lr_schedule"):
        clformer.Trainer(task="lm", text=data / "text.txt", steps=3, lr_schedule="linear")
    with pytest.raises(clformer.InvalidArgumentError, match="n_heads"):
        clformer.Trainer(LM_OPTIONS, text=data / "text.txt", steps=3, heads=3)
    with pytest.raises(clformer.FileError, match="nosuch.txt"):
        clformer.Trainer(LM_OPTIONS, text=data / "nosuch.txt", steps=3)
    with pytest.raises(ValueError, match="2 source sentences but 1"):
        clformer.Trainer(MT_OPTIONS, src=["a b", "c"], tgt=["b a"], steps=3)


def test_an_existing_file_is_replaced_only_when_asked(data, tmp_path):
    options = dict(LM_OPTIONS, text=data / "text.txt", steps=2)
    mine = tmp_path / "mine.safetensors"
    mine.write_bytes(b"the user's own file")
    with pytest.raises(clformer.InvalidArgumentError, match="this run did not make it"):
        clformer.Trainer(options, save=mine)
    assert mine.read_bytes() == b"the user's own file"
    with clformer.Trainer(options, save=mine, overwrite=True) as trainer:
        assert trainer.run().steps == 2
    assert mine.read_bytes() != b"the user's own file"
