#include "onnxfuse/onnx_writer.h"
