#include "onnxfuse/greedy_fuser.h"
