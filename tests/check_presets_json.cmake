# Fails when tools/reference/presets.json (read by the PyTorch baseline,
# tools/reference/bench_torch.py) differs from `clformer presets --json`, the
# library's one table of presets. Regenerate it with
#   build/clformer presets --json > tools/reference/presets.json
execute_process(COMMAND ${CLFORMER} presets --json RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clformer presets --json failed (${rc}): ${err}")
endif()
file(READ ${SOURCE_DIR}/tools/reference/presets.json committed)
if(NOT out STREQUAL committed)
  message(FATAL_ERROR "tools/reference/presets.json differs from `clformer presets --json`; "
          "regenerate it: build/clformer presets --json > tools/reference/presets.json\n"
          "clformer:\n${out}\nfile:\n${committed}")
endif()
message("tools/reference/presets.json matches clformer presets --json")
