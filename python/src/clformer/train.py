"""Training: a run built from `clformer train`'s options, iterated step by
step or run to the end, with validation, checkpoints and resuming.

Options are the command's long options with '_' for '-' (batch_size for
--batch-size), given as keyword arguments or a dict; the run starts where the
command starts (clformer_train_options_for_task: the task's defaults and the
preset's shape) and the options given change it as the command's flags do, so
the same options train the same steps bit for bit. Differences from the
command: nothing is saved unless `save` is given (the command saves to
clformer-model.safetensors by default); `src`/`tgt`/`val_src`/`val_tgt` also
take lists of sentences; `max_time` is seconds; SentencePiece models are
given (tokenizer_model), not learned. As the command, a run replaces only the
files it made (and resume's) unless `overwrite=True` (--overwrite).
"""
from __future__ import annotations

import math
import os
from ctypes import byref, c_bool, c_char_p, c_int, c_void_p
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Union

from . import _lib
from ._device import Device, long_call, resolve
from ._lib import TrainOptions, TrainProgress, TrainResult, check, check_size, encode, lib
from ._model import Model, precision_code
from .lm import LanguageModel
from .translate import Translator


class Validation(NamedTuple):
    """A validation's figures (translation: BLEU over bleu_sentences too)."""

    step: int
    loss: float        #: plain cross-entropy over the validation data
    perplexity: float
    bleu: Optional[float]
    tokens: int
    seconds: float


class Step(NamedTuple):
    """One optimizer step's figures, as the command's log line has them;
    `validation` holds the validation run after it (every eval_every steps,
    and after the last step the final one), else None."""

    step: int
    epoch: int
    loss: float
    tokens: int
    lr: float
    grad_norm: float
    tokens_per_s: float
    elapsed_s: float
    steps_left: float
    last: bool
    validation: Optional[Validation]


class Result(NamedTuple):
    """What a finished run reports (clformer_train_result)."""

    steps: int
    loss: float
    val_loss: Optional[float]
    val_bleu: Optional[float]
    seconds: float
    tokens_per_s: float
    stopped: bool
    early_stopped: bool
    time_limited: bool
    best_val: Optional[float]
    best_step: int
    saved_to: Optional[str]


def _number(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


def _validation(p: TrainProgress) -> Validation:
    return Validation(p.step, p.val_loss, p.val_ppl, _number(p.val_bleu), p.val_tokens,
                      p.val_seconds)


def _step(p: TrainProgress, validation: Optional[Validation]) -> Step:
    return Step(p.step, p.epoch, p.loss, p.tokens, p.lr, p.grad_norm, p.tokens_per_s,
                p.elapsed_s, p.steps_left, p.last, validation)


_SCHEDULES = {"constant": 0, "noam": 1, "inverse-sqrt": 2, "cosine": 3}  # clformer_lr_schedule
_OPTIMIZERS = {"adam": 0, "adamw": 1}  # clformer_optimizer
_METRICS = {"loss": 0, "bleu": 1}  # clformer_val_metric
_LM_TOKENIZERS = {"char": 0, "byte": 1, "gpt2-bpe": 2, "spm": 3}  # clformer_lm_tokenizer

# every option, with the command's spelling; a value of None leaves the default
OPTIONS = (
    "task config text val_text val_fraction context eval_batches lr_decay_steps min_lr src tgt "
    "val_src val_tgt d_model heads d_ff enc_layers dec_layers max_len post_norm activation "
    "positional tie_embeddings share_all_embeddings dropout attention_dropout "
    "activation_dropout label_smoothing min_freq max_vocab tokenizer bpe_vocab bpe_merges "
    "tokenizer_dir tokenizer_model src_tokenizer_model tgt_tokenizer_model init resume steps "
    "max_time epochs batch_size batch_tokens no_shuffle seed lr lr_schedule warmup "
    "warmup_init_lr optimizer weight_decay clip eval_every bleu_sentences save save_every "
    "keep_last save_best best_metric patience log overwrite recompute precision loss_scale").split()


def _choice(table: Dict[str, int], option: str, value: str) -> int:
    if value not in table:
        raise ValueError(f"{option} must be one of {', '.join(table)}, not {value!r}")
    return table[value]


class Trainer:
    """A training run on a device, as `clformer train` makes it.

        trainer = clformer.Trainer(task="lm", text="input.txt", steps=200, save="lm.safetensors")
        for step in trainer:                  # one optimizer step each
            print(step.step, step.loss)
        model = trainer.model                 # a LanguageModel (or Translator)

    or `trainer.run(callback)` to the end. Ctrl-C during a step stops the run
    after it: the checkpoint (`save`) is written, then KeyboardInterrupt is
    raised; `with Trainer(...) as t:` also saves when the interrupt comes in
    the loop's own code. A trainer is used by one thread at a time.
    """

    def __init__(self, options: Optional[Mapping[str, Any]] = None, *,
                 device: Union[Device, str, None] = None, **kwargs: Any):
        given = dict(options or {})
        given.update(kwargs)
        unknown = sorted(set(given) - set(OPTIONS))
        if unknown:
            raise TypeError(f"unknown training option(s) {', '.join(unknown)}; the options "
                            f"are clformer train's: {', '.join(OPTIONS)}")
        self.options = {k: v for k, v in given.items() if v is not None}
        self.device = resolve(device)
        self._keep: List[Any] = []      # what the C options borrow: strings, texts, bytes
        self._texts: List[int] = []     # clformer_parallel_text handles to free
        self._handle: Optional[int] = None
        self._model: Optional[Model] = None
        self.result: Optional[Result] = None
        self._finished = False
        try:
            self._options = self._build()
            handle = c_void_p()
            with self.device.use() as ctx:
                long_call(lambda: lib.clformer_trainer_create(ctx, byref(self._options),
                                                              byref(handle)))
            self._handle = handle.value
        except BaseException:
            self._free_texts()
            raise

    # --- the options --------------------------------------------------------------

    def _str(self, value: Any) -> bytes:
        data = os.fsencode(value) if isinstance(value, os.PathLike) else str(value).encode()
        self._keep.append(data)
        return data

    def _file_bytes(self, path: Any):
        with open(path, "rb") as f:
            data = f.read()
        self._keep.append(data)
        return c_char_p(data), len(data)

    def _text(self, src: List[str], tgt: List[str], what: str) -> int:
        n = len(src)
        if len(tgt) != n:
            raise ValueError(f"{what}: {n} source sentences but {len(tgt)} target sentences")
        a = (c_char_p * n)(*[s.encode("utf-8") for s in src])
        b = (c_char_p * n)(*[t.encode("utf-8") for t in tgt])
        handle = c_void_p()
        check(lib.clformer_parallel_text_from_lines(a, b, n, f"{what} source".encode(),
                                                    f"{what} target".encode(), byref(handle)))
        self._texts.append(handle.value)
        return handle.value

    def _build(self) -> TrainOptions:
        g = self.options
        task = g.get("task", "translate")
        if task not in ("translate", "lm"):
            raise ValueError(f"task must be 'translate' or 'lm', not {task!r}")
        lm = task == "lm"
        o = TrainOptions()
        lib.clformer_train_options_default(byref(o))
        check_size(o, "clformer_train_options")
        preset = g.get("config")
        check(lib.clformer_train_options_for_task(byref(o), lm,
                                                  None if preset is None else encode(preset)))
        c = o.config
        if lm:
            self._lm_data(o, g)
        else:
            self._pairs(o, g)
        # batching
        if "batch_size" in g:
            o.batching.batch_size, o.batching.batch_tokens = g["batch_size"], 0
        elif "batch_tokens" in g:
            o.batching.batch_tokens = g["batch_tokens"]
        o.batching.shuffle = not g.get("no_shuffle", False)
        o.seed = o.batching.seed = g.get("seed", o.seed)
        # the model's shape
        for option, field in (("d_model", "d_model"), ("heads", "n_heads"), ("d_ff", "d_ff"),
                              ("enc_layers", "n_enc_layers"), ("dec_layers", "n_dec_layers"),
                              ("max_len", "max_len"), ("context", "max_len"),
                              ("dropout", "dropout"), ("label_smoothing", "label_smoothing")):
            if option in g:
                setattr(c, field, g[option])
        if g.get("post_norm"):
            c.norm_first = False
        for option, parse in (("activation", lib.clformer_activation_parse),
                              ("positional", lib.clformer_positional_parse)):
            if option in g:
                code = c_int()
                check(parse(encode(g[option]), byref(code)))
                setattr(c, option, code.value)
        if not lm:
            c.share_tgt_embed = bool(g.get("tie_embeddings") or g.get("share_all_embeddings"))
            c.share_all_embed = bool(g.get("share_all_embeddings"))
        c.attention_dropout = g.get("attention_dropout", -1.0)
        c.activation_dropout = g.get("activation_dropout", -1.0)
        o.override_dropout = any(k in g for k in ("dropout", "attention_dropout",
                                                  "activation_dropout"))
        o.override_label_smoothing = "label_smoothing" in g
        o.min_freq = g.get("min_freq", o.min_freq)
        o.max_vocab = g.get("max_vocab", o.max_vocab)
        if "init" in g:
            o.init_path = self._str(g["init"])
        if "resume" in g:
            o.resume_path = self._str(g["resume"])
        # optimisation
        if "optimizer" in g:
            o.optim.optimizer = _choice(_OPTIMIZERS, "optimizer", g["optimizer"])
        o.optim.weight_decay = g.get("weight_decay", o.optim.weight_decay)
        o.optim.clip = g.get("clip", o.optim.clip)
        o.lr = g.get("lr", o.lr)
        if "lr_schedule" in g:
            o.schedule = _choice(_SCHEDULES, "lr_schedule", g["lr_schedule"])
        o.warmup = g.get("warmup", o.warmup)
        o.warmup_init_lr = g.get("warmup_init_lr", o.warmup_init_lr)
        o.decay_steps = g.get("lr_decay_steps", 0)
        o.min_lr = g.get("min_lr", -1.0)
        # limits, validation, output
        o.steps = g.get("steps", 0)
        o.epochs = g.get("epochs", 0)
        o.max_seconds = float(g.get("max_time", 0.0))
        o.eval_every = g.get("eval_every", 0)
        o.bleu_sentences = g.get("bleu_sentences", o.bleu_sentences)
        if "save" in g:
            o.save_path = o.stop_save_path = self._str(g["save"])
        o.save_every = g.get("save_every", 0)
        o.keep_last = g.get("keep_last", 0)
        o.save_best = bool(g.get("save_best", False))
        if "best_metric" in g:
            o.best_metric = _choice(_METRICS, "best_metric", g["best_metric"])
        o.patience = g.get("patience", 0)
        if "log" in g:
            o.log_path = self._str(g["log"])
        # the command's --overwrite: replace save/log files this run did not make
        o.overwrite = bool(g.get("overwrite", False))
        o.recompute = bool(g.get("recompute", False))
        o.precision = precision_code(g.get("precision", "fp32"))
        o.loss_scale = g.get("loss_scale", 0.0)
        return o

    def _lm_data(self, o: TrainOptions, g: Dict[str, Any]) -> None:
        for option in ("src", "tgt", "val_src", "val_tgt"):
            if option in g:
                raise ValueError(f"task 'lm' reads text (and val_text), not {option}")
        if "text" not in g:
            raise ValueError("task 'lm' needs text: the training text's file")
        o.text_path = self._str(g["text"])
        if "val_text" in g:
            o.val_text_path = self._str(g["val_text"])
            o.val_fraction = 0.0
        else:
            o.val_fraction = g.get("val_fraction", o.val_fraction)
        o.eval_batches = g.get("eval_batches", o.eval_batches)
        tokenizer = g.get("tokenizer", "char")
        o.lm_tokenizer = _choice(_LM_TOKENIZERS, "tokenizer (task 'lm')", tokenizer)
        if tokenizer == "gpt2-bpe":
            directory = g.get("tokenizer_dir")
            vocab = g.get("bpe_vocab") or (directory and os.path.join(directory, "vocab.json"))
            merges = g.get("bpe_merges") or (directory and os.path.join(directory, "merges.txt"))
            if not vocab or not merges:
                raise ValueError("tokenizer 'gpt2-bpe' needs bpe_vocab and bpe_merges (GPT-2's "
                                 "vocab.json and merges.txt) or tokenizer_dir holding both")
            o.bpe_vocab_path, o.bpe_merges_path = self._str(vocab), self._str(merges)
        elif tokenizer == "spm":
            o.tgt_spm, o.tgt_spm_size = self._spm(g, "tokenizer_model")

    def _spm(self, g: Dict[str, Any], option: str):
        if "vocab_size" in g or option not in g:
            raise ValueError(f"tokenizer 'spm' needs {option}: a SentencePiece FILE.model "
                             "(learn one with `clformer train --tokenizer spm --vocab-size N`)")
        return self._file_bytes(g[option])

    def _pairs(self, o: TrainOptions, g: Dict[str, Any]) -> None:
        if "text" in g or "val_text" in g:
            raise ValueError("text is for task 'lm'; translation reads src and tgt")
        for sides, text_field, paths in ((("src", "tgt"), "train_text",
                                          ("src_path", "tgt_path")),
                                         (("val_src", "val_tgt"), "val_text",
                                          ("val_src_path", "val_tgt_path"))):
            a, b = (g.get(s) for s in sides)
            if a is None and b is None:
                continue
            if a is None or b is None:
                raise ValueError(f"{sides[0]} and {sides[1]} go together")
            if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
                what = "training" if sides[0] == "src" else "validation"
                setattr(o, text_field, self._text(list(a), list(b), what))
            else:
                setattr(o, paths[0], self._str(a))
                setattr(o, paths[1], self._str(b))
        tokenizer = g.get("tokenizer", "word")
        if tokenizer == "spm":
            if "tokenizer_model" in g:
                o.src_spm, o.src_spm_size = self._spm(g, "tokenizer_model")
                o.tgt_spm, o.tgt_spm_size = o.src_spm, o.src_spm_size
            else:
                o.src_spm, o.src_spm_size = self._spm(g, "src_tokenizer_model")
                o.tgt_spm, o.tgt_spm_size = self._spm(g, "tgt_tokenizer_model")
        elif tokenizer != "word":
            raise ValueError(f"tokenizer for translation is 'word' or 'spm', not {tokenizer!r}")

    # --- the run --------------------------------------------------------------------

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise ValueError("the trainer was closed")
        return self._handle

    @property
    def done(self) -> bool:
        """The run is over (limit reached, stopped, or finished): next() ends."""
        return self._finished or bool(lib.clformer_trainer_done(self.handle))

    def __iter__(self) -> Iterator[Step]:
        return self

    def __next__(self) -> Step:
        try:
            return self._next()
        except KeyboardInterrupt:  # wherever it came: the checkpoint first, then raise
            if not self._finished and self._handle is not None:
                with self.device.use():
                    self._stop_and_save()
            raise

    def _next(self) -> Step:
        if self.done:
            if not self._finished:
                self.finish()
            raise StopIteration
        step, validation, validated = TrainProgress(), TrainProgress(), c_bool()
        with self.device.use():
            long_call(lambda: lib.clformer_trainer_step(self.handle, byref(step),
                                                        byref(validation), byref(validated)),
                      lambda: lib.clformer_trainer_request_stop(self.handle))
        result = _step(step, _validation(validation) if validated.value else None)
        if lib.clformer_trainer_done(self.handle) and not self._finished:
            final = self.finish()
            if final is not None:  # the final validation belongs to the last step
                result = result._replace(validation=final)
        return result

    def _stop_and_save(self) -> None:
        """After Ctrl-C: the stop checkpoint, then the caller raises."""
        if self._finished or self._handle is None:
            return
        lib.clformer_trainer_request_stop(self._handle)
        try:
            self._finish_call()
        except _lib.errors.StoppedError:
            pass

    def _finish_call(self) -> Optional[Validation]:
        result, validation, validated = TrainResult(), TrainProgress(), c_bool()
        self._finished = True
        try:
            long_call(lambda: lib.clformer_trainer_finish(self.handle, byref(result),
                                                          byref(validation), byref(validated)),
                      lambda: lib.clformer_trainer_request_stop(self.handle))
        finally:
            self.result = Result(
                result.steps, result.loss, _number(result.val_loss), _number(result.val_bleu),
                result.seconds, result.tokens_per_s, result.stopped, result.early_stopped,
                result.time_limited, _number(result.best_val), result.best_step,
                result.saved_to.decode() if result.saved_to else None)
        return _validation(validation) if validated.value else None

    def finish(self) -> Optional[Validation]:
        """Ends the run where it is (iterating to the end calls it): the final
        validation (returned, or None), the save, the log closed; `result`
        then holds the run's figures. Ctrl-C here saves and raises
        KeyboardInterrupt."""
        if self._finished:
            raise ValueError("the run has already finished")
        with self.device.use():
            try:
                return self._finish_call()
            except _lib.errors.StoppedError:
                raise KeyboardInterrupt(f"training stopped at step {self.result.steps}"
                                        if self.result else "training stopped") from None

    def run(self, callback: Optional[Callable[[Step], Optional[bool]]] = None) -> Result:
        """Trains to the end, calling callback(step) after every step (return
        False to stop the run there: it finishes normally, validated and
        saved). Returns the run's Result."""
        try:
            for step in self:
                if callback is not None and callback(step) is False and not self._finished:
                    self.finish()
                    break
        except KeyboardInterrupt:  # also one that came in the callback: save, then raise
            if not self._finished:
                with self.device.use():
                    self._stop_and_save()
            raise
        assert self.result is not None
        return self.result

    @property
    def model(self) -> Model:
        """The model being trained: a LanguageModel or a Translator, owned by
        the trainer (valid until it is closed); `save` it, or keep using it
        for generation or translation after the run."""
        if self._model is None:
            handle = lib.clformer_trainer_model(self.handle)
            lm = lib.clformer_model_config(handle).contents.n_enc_layers == 0
            cls = LanguageModel if lm else Translator
            self._model = cls(handle, self.device, owned=False)
        return self._model

    # --- lifetime ---------------------------------------------------------------------

    def _free_texts(self) -> None:
        for text in self._texts:
            lib.clformer_parallel_text_free(text)
        self._texts = []

    def _free(self) -> None:
        """Frees the model's session, the run and its texts; call it holding
        the device."""
        if self._model is not None:
            self._model._free()  # not its own: the session alone
        if self._handle is not None:
            lib.clformer_trainer_free(self._handle)
            self._handle = None
        self._free_texts()

    def close(self) -> None:
        """Frees the run (its model too: save it first)."""
        if self._handle is not None:
            with self.device.use():
                self._free()

    def __enter__(self) -> "Trainer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is KeyboardInterrupt and self._handle is not None:
                with self.device.use():
                    self._stop_and_save()
        finally:
            self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.device.free_later(self._free)
