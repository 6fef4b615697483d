#include "onnxfuse/report.h"
