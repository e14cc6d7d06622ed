"""The C library through ctypes: its structs, its functions' signatures, and
the one place a status becomes an exception.

ctypes needs no compiler at install time and releases the GIL during every
foreign call, which the package relies on (docs/PYTHON.md "Threads"). The
structs mirror include/clformer.h field for field; the options structs carry
their size, which the library's _default() functions write, so a struct that
drifted from the header is caught when it is first filled (check_size).
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, c_bool, c_char, c_char_p, c_double, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint32, c_uint64, c_void_p)
from pathlib import Path
from typing import Optional

from . import errors

c_int32_p = POINTER(c_int32)
c_size_t_p = POINTER(c_size_t)


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("platform_index", c_int), ("device_index", c_int), ("selector", c_char * 32),
        ("platform", c_char * 128), ("platform_version", c_char * 128),
        ("platform_vendor", c_char * 128), ("vendor", c_char * 128), ("name", c_char * 256),
        ("driver_version", c_char * 128), ("device_version", c_char * 128),
        ("c_version", c_char * 128), ("type", c_int), ("compute_units", c_uint32),
        ("clock_mhz", c_uint32), ("global_mem_bytes", c_uint64), ("local_mem_bytes", c_uint64),
        ("max_alloc_bytes", c_uint64), ("max_work_group_size", c_size_t), ("fp16", c_bool),
        ("fp64", c_bool), ("unified_memory", c_bool), ("native_kernels", c_bool),
        ("simulator", c_bool), ("bf16", c_bool), ("vector_width_float", c_uint32),
        ("native_vector_width_float", c_uint32), ("subgroup_sizes", c_uint32 * 8),
        ("n_subgroup_sizes", c_uint32)]


class Config(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t), ("d_model", c_int), ("n_heads", c_int), ("d_ff", c_int),
        ("n_enc_layers", c_int), ("n_dec_layers", c_int), ("src_vocab", c_int),
        ("tgt_vocab", c_int), ("max_len", c_int), ("norm_first", c_bool), ("activation", c_int),
        ("positional", c_int), ("dropout", c_float), ("ln_eps", c_float),
        ("label_smoothing", c_float), ("share_tgt_embed", c_bool), ("scale_embed", c_bool),
        ("generator_bias", c_bool), ("attention_dropout", c_float),
        ("activation_dropout", c_float), ("share_all_embed", c_bool), ("family", c_int),
        ("n_kv_heads", c_int), ("rope_theta", c_float), ("rope_scaling", c_int),
        ("rope_factor", c_float), ("rope_base_len", c_int)]


class OptimConfig(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("optimizer", c_int), ("beta1", c_float), ("beta2", c_float),
                ("eps", c_float), ("weight_decay", c_float), ("clip", c_float)]


class BatcherOptions(ctypes.Structure):
    _fields_ = [("batch_size", c_int), ("batch_tokens", c_int), ("shuffle", c_bool),
                ("seed", c_uint64), ("bucket_window", c_int)]


class TrainProgress(ctypes.Structure):
    _fields_ = [
        ("event", c_int), ("step", c_uint64), ("epoch", c_uint64), ("loss", c_double),
        ("tokens", c_size_t), ("lr", c_float), ("grad_norm", c_double),
        ("tokens_per_s", c_double), ("elapsed_s", c_double), ("steps_left", c_double),
        ("last", c_bool), ("val_loss", c_double), ("val_ppl", c_double), ("val_bleu", c_double),
        ("val_tokens", c_size_t), ("val_bleu_sentences", c_size_t), ("val_seconds", c_double)]


TRAIN_CALLBACK = ctypes.CFUNCTYPE(c_bool, POINTER(TrainProgress), c_void_p)


class TrainOptions(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t), ("train_text", c_void_p), ("val_text", c_void_p),
        ("src_path", c_char_p), ("tgt_path", c_char_p), ("val_src_path", c_char_p),
        ("val_tgt_path", c_char_p), ("min_freq", c_int), ("max_vocab", c_int),
        ("src_spm", c_void_p), ("tgt_spm", c_void_p), ("src_spm_size", c_size_t),
        ("tgt_spm_size", c_size_t), ("batching", BatcherOptions), ("config", Config),
        ("init_path", c_char_p), ("resume_path", c_char_p), ("override_dropout", c_bool),
        ("override_label_smoothing", c_bool), ("seed", c_uint64), ("optim", OptimConfig),
        ("lr", c_float), ("schedule", c_int), ("warmup", c_uint64), ("warmup_init_lr", c_float),
        ("steps", c_uint64), ("epochs", c_uint64), ("eval_every", c_uint64),
        ("bleu_sentences", c_size_t), ("save_path", c_char_p), ("save_every", c_uint64),
        ("stop_save_path", c_char_p), ("keep_last", c_uint64), ("save_best", c_bool),
        ("best_metric", c_int), ("patience", c_uint64), ("log_path", c_char_p),
        ("callback", TRAIN_CALLBACK), ("user", c_void_p), ("collective", c_void_p),
        ("check_sync_every", c_uint64), ("text_path", c_char_p), ("val_text_path", c_char_p),
        ("val_fraction", c_float), ("lm_tokenizer", c_int), ("eval_batches", c_size_t),
        ("decay_steps", c_uint64), ("min_lr", c_float), ("bpe_vocab_path", c_char_p),
        ("bpe_merges_path", c_char_p), ("recompute", c_bool), ("precision", c_int),
        ("loss_scale", c_float), ("max_seconds", c_double), ("overwrite", c_bool)]


class TrainResult(ctypes.Structure):
    _fields_ = [
        ("steps", c_uint64), ("loss", c_double), ("val_loss", c_double), ("val_bleu", c_double),
        ("seconds", c_double), ("tokens_per_s", c_double), ("stopped", c_bool),
        ("early_stopped", c_bool), ("best_val", c_double), ("best_step", c_uint64),
        ("saved_to", c_char_p), ("time_limited", c_bool)]


class SampleOptions(ctypes.Structure):
    _fields_ = [("max_tokens", c_int), ("temperature", c_float), ("top_k", c_int),
                ("top_p", c_float), ("seed", c_uint64)]


class DecodeOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("beam", c_int), ("max_len", c_int),
                ("length_penalty", c_float), ("record_attention", c_bool)]


class Bleu(ctypes.Structure):
    _fields_ = [("score", c_double), ("precisions", c_double * 4), ("bp", c_double),
                ("hyp_len", c_uint64), ("ref_len", c_uint64)]


class BleuOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("tokenize", c_int), ("lowercase", c_bool)]


class LmScore(ctypes.Structure):
    _fields_ = [("loss", c_double), ("perplexity", c_double), ("bits_per_byte", c_double),
                ("tokens", c_size_t), ("bytes", c_size_t)]


class Batch(ctypes.Structure):
    _fields_ = [("batch", c_size_t), ("src_len", c_size_t), ("tgt_len", c_size_t),
                ("src", c_int32_p), ("tgt", c_int32_p)]


ROW_TOKEN_CALLBACK = ctypes.CFUNCTYPE(c_bool, c_size_t, c_int32, c_void_p)

# name: (restype, argtypes); "status" functions return a clformer_status
_S = c_int
_P = c_void_p
_SIGNATURES = {
    "clformer_version": (c_char_p, []),
    "clformer_status_name": (c_char_p, [c_int]),
    "clformer_last_error": (c_char_p, []),
    "clformer_free": (None, [c_void_p]),
    "clformer_list_devices": (_S, [POINTER(POINTER(DeviceInfo)), c_size_t_p]),
    "clformer_select_device": (_S, [POINTER(DeviceInfo), c_size_t, c_char_p, c_size_t_p]),
    "clformer_device_type_name": (c_char_p, [c_int]),
    "clformer_context_create": (_S, [c_char_p, POINTER(_P)]),
    "clformer_context_free": (None, [_P]),
    "clformer_context_device": (POINTER(DeviceInfo), [_P]),
    "clformer_config_presets": (POINTER(c_char_p), []),
    "clformer_config_lm_presets": (POINTER(c_char_p), []),
    "clformer_config_to_json": (c_void_p, [POINTER(Config)]),
    "clformer_precision_parse": (_S, [c_char_p, POINTER(c_int)]),
    "clformer_model_load": (_S, [_P, c_char_p, POINTER(_P)]),
    "clformer_model_free": (None, [_P]),
    "clformer_model_save": (_S, [_P, c_char_p, c_bool]),
    "clformer_model_config": (POINTER(Config), [_P]),
    "clformer_model_parameter_count": (c_size_t, [_P]),
    "clformer_model_step": (c_uint64, [_P]),
    "clformer_model_tensor_count": (c_size_t, [_P]),
    "clformer_model_tensor_info": (_S, [_P, c_size_t, POINTER(c_char_p), POINTER(c_int),
                                        POINTER(c_int64)]),
    "clformer_model_read_tensor": (_S, [_P, c_char_p, c_bool, c_void_p, c_size_t]),
    "clformer_model_write_tensor": (_S, [_P, c_char_p, c_void_p, c_size_t]),
    "clformer_model_export_hf_gpt2_as": (_S, [_P, c_char_p, c_int]),
    "clformer_session_create": (_S, [_P, POINTER(_P)]),
    "clformer_session_free": (None, [_P]),
    "clformer_session_set_precision": (_S, [_P, c_int]),
    "clformer_session_logits": (_S, [_P, POINTER(Batch), c_void_p]),
    "clformer_session_lm_score": (_S, [_P, c_int32_p, c_size_t, c_size_t, c_size_t,
                                       POINTER(LmScore)]),
    "clformer_session_generate_batch": (_S, [_P, POINTER(c_int32_p), c_size_t_p, c_size_t,
                                             c_size_t, POINTER(SampleOptions),
                                             ROW_TOKEN_CALLBACK, c_void_p, c_int32_p,
                                             c_size_t_p]),
    "clformer_sample_options_default": (None, [POINTER(SampleOptions)]),
    "clformer_lm_encode": (_S, [_P, c_char_p, c_size_t, POINTER(c_int32_p), c_size_t_p]),
    "clformer_lm_decode": (_S, [_P, c_int32_p, c_size_t, POINTER(c_void_p)]),
    "clformer_lm_text_stream_create": (_S, [_P, c_int32_p, c_size_t, POINTER(_P)]),
    "clformer_lm_text_stream_push": (_S, [_P, c_int32, POINTER(c_void_p), c_size_t_p]),
    "clformer_lm_text_stream_flush": (_S, [_P, POINTER(c_void_p), c_size_t_p]),
    "clformer_lm_text_stream_free": (None, [_P]),
    "clformer_decode_options_default": (None, [POINTER(DecodeOptions)]),
    "clformer_translate_sentences": (_S, [_P, POINTER(c_char_p), c_size_t,
                                          POINTER(DecodeOptions), c_size_t, POINTER(c_void_p),
                                          c_size_t_p, c_void_p, c_void_p]),
    "clformer_bleu_options_default": (None, [POINTER(BleuOptions)]),
    "clformer_bleu_corpus_with": (_S, [POINTER(c_char_p), POINTER(c_char_p), c_size_t,
                                       POINTER(BleuOptions), POINTER(Bleu)]),
    "clformer_bleu_format": (None, [POINTER(Bleu), c_char_p, c_size_t]),
    "clformer_bleu_signature_with": (_S, [POINTER(BleuOptions), c_char_p, c_size_t]),
    "clformer_parallel_text_from_lines": (_S, [POINTER(c_char_p), POINTER(c_char_p), c_size_t,
                                               c_char_p, c_char_p, POINTER(_P)]),
    "clformer_parallel_text_free": (None, [_P]),
    "clformer_train_options_default": (None, [POINTER(TrainOptions)]),
    "clformer_train_options_for_task": (_S, [POINTER(TrainOptions), c_bool, c_char_p]),
    "clformer_activation_parse": (_S, [c_char_p, POINTER(c_int)]),
    "clformer_positional_parse": (_S, [c_char_p, POINTER(c_int)]),
    "clformer_trainer_create": (_S, [_P, POINTER(TrainOptions), POINTER(_P)]),
    "clformer_trainer_free": (None, [_P]),
    "clformer_trainer_step": (_S, [_P, POINTER(TrainProgress), POINTER(TrainProgress),
                                   POINTER(c_bool)]),
    "clformer_trainer_done": (c_bool, [_P]),
    "clformer_trainer_finish": (_S, [_P, POINTER(TrainResult), POINTER(TrainProgress),
                                     POINTER(c_bool)]),
    "clformer_trainer_request_stop": (None, [_P]),
    "clformer_trainer_model": (_P, [_P]),
}


def _find_library() -> str:
    """The library: $CLFORMER_LIBRARY (a build tree's, for development), else
    the one installed beside this package."""
    given = os.environ.get("CLFORMER_LIBRARY")
    if given:
        return given
    here = Path(__file__).resolve().parent
    for name in ("libclformer.so", "libclformer.dylib"):
        if (here / name).exists():
            return str(here / name)
    raise ImportError(f"libclformer is not installed beside {here}: install the package with "
                      "`pip install ./python` from the repository, or set CLFORMER_LIBRARY to "
                      "a built libclformer.so")


def _load() -> ctypes.CDLL:
    lib = ctypes.CDLL(_find_library())
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


lib = _load()


def last_error() -> str:
    return lib.clformer_last_error().decode("utf-8", "replace")


def error(status: int, message: Optional[str] = None) -> errors.ClformerError:
    """The exception of a status, with the C message (the calling thread's last)."""
    return errors.from_status(status, last_error() if message is None else message)


def check(status: int) -> None:
    """Raises the exception of a failed status; call it on the thread that made the call."""
    if status != 0:
        raise error(status)


def check_size(struct: ctypes.Structure, what: str) -> None:
    """After a _default() call: the library wrote its sizeof into `size`."""
    if struct.size != ctypes.sizeof(struct):
        raise ImportError(f"{what}: the library's struct has {struct.size} bytes, this "
                          f"package's {ctypes.sizeof(struct)}: the package and libclformer "
                          "come from different versions (reinstall the package)")


def take_string(pointer: Optional[int]) -> str:
    """A string the library allocated for the caller, read and released."""
    if not pointer:
        return ""
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        lib.clformer_free(pointer)


def encode(text: Optional[str]) -> Optional[bytes]:
    return None if text is None else os.fsencode(text) if isinstance(text, os.PathLike) \
        else text.encode("utf-8")
