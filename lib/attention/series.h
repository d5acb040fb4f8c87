/* series.h — a kernel's names in the command's results files (registry.c): the row's
 * series[causal], "linear" or "linear_causal_chunked". Internal, not exported: the
 * command includes it (tests/command/check_command.sh lets it). */
#ifndef LA_ATTENTION_SERIES_H
#define LA_ATTENTION_SERIES_H

#include "linattn.h"

/* The series name of kernel with causal 0 or 1 (NULL where its causal rule forbids it):
 * the row's series[causal], for the command's results files. */
const char *la_kernel_series(la_kernel kernel, int causal);
/* Series name -> kernel and causal flag. LA_EINVAL if no row has that series. */
la_status la_kernel_series_parse(const char *series, la_kernel *kernel, int *causal);

#endif /* LA_ATTENTION_SERIES_H */
