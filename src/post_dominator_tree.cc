#include "onnxfuse/post_dominator_tree.h"
