# The layers of runtime/, bottom first, and the layers each one may use
# (docs/ARCHITECTURE.md draws them). Read by CMakeLists.txt, which makes one
# object library per layer whose include path holds only the layer and those
# below it, and by tests/check_layer_includes.cmake, which fails on a quoted
# include that climbs. A layer listed here sees the layers below it
# transitively: "model: ops data" also lets model include device and core.
#
#   reference  runtime/check/reference: the double-precision reference (plain C, no layer)
#   core       status codes, log, files and the door for writes, hashing, UTF-8
#   device     OpenCL: context, programs, buffers, launches, GEMM
#   ops        one launcher per layer of kernels
#   data       host-only text: vocabularies, corpus, batcher, BLEU, SentencePiece
#   model      the model and its graph: parameters, sessions, activations,
#              forward/backward, a batch's passes
#   format     files of models: safetensors, checkpoints, Hugging Face layouts,
#              export, averaging
#   decode     decoding: key/value caches, greedy, beam search, sampling
#   pipeline   text through a model: translating sentences, corpus loss, encoding
#   train      training: the step and its schedules, the loop, validation,
#              checkpoints, exact resume
#   check      conformance checks of single ops against the reference
set(CLFORMER_LAYERS reference core device ops data model format decode pipeline train check)
set(CLFORMER_LAYER_USES_reference "")
set(CLFORMER_LAYER_USES_core "")
set(CLFORMER_LAYER_USES_device core)
set(CLFORMER_LAYER_USES_ops device)
set(CLFORMER_LAYER_USES_data core)
set(CLFORMER_LAYER_USES_model ops data)
set(CLFORMER_LAYER_USES_format model)
set(CLFORMER_LAYER_USES_decode model)
set(CLFORMER_LAYER_USES_pipeline decode)
set(CLFORMER_LAYER_USES_train pipeline format)
set(CLFORMER_LAYER_USES_check ops reference)
# Layers that neither include OpenCL's headers (test_layer_includes) nor call
# an OpenCL function (test_layer_symbols): core and data are host-only; the
# names of OpenCL's error codes are the device layer's (cl_status.h).
set(CLFORMER_HOST_ONLY_LAYERS reference core data)

# The folder of a layer, relative to the source tree.
function(clformer_layer_dir layer out)
  if(layer STREQUAL "reference")
    set(${out} runtime/check/reference PARENT_SCOPE)
  else()
    set(${out} runtime/${layer} PARENT_SCOPE)
  endif()
endfunction()

# `layer` and every layer below it that it may use, transitively.
function(clformer_layer_visible layer out)
  set(seen ${layer})
  set(todo ${CLFORMER_LAYER_USES_${layer}})
  while(todo)
    list(POP_FRONT todo l)
    if(NOT l IN_LIST seen)
      list(APPEND seen ${l})
      list(APPEND todo ${CLFORMER_LAYER_USES_${l}})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()
