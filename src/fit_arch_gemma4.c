#include "fit_llm.h"
void gm_arch_gemma4(gm_llm *l) { (void)l; }
