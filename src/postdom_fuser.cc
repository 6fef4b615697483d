#include "onnxfuse/postdom_fuser.h"
