#include "fit_llm.h"
void gm_arch_qwen4exp(gm_llm *l) { (void)l; }
