/* harness.h — the map of experiments/common/, the harness every `linattn` subcommand is
 * built on. Nothing includes this file: a subcommand includes the headers it uses. Each
 * exported name starts with its file's name (record_open is in record.c, TIMER_MAX_…
 * in timer.h), so `grep -n '^[a-z].*record_open' experiments/common/*.c` finds it;
 * file-static helpers have no prefix.
 *
 * The files, one job each:
 *   cli          the one-line error rule, number parsers, long options and their aliases
 *   arrays       .npy inputs and outputs: read, converted to a precision, written whole
 *   layout       bhnd and bnhd arrays (--layout)
 *   inputs       seeded random inputs, error measures, the --q/--k/--v input source
 *   outputs      several .npy outputs committed together or not at all
 *   textout      a text output built in memory and written whole
 *   guard        the committed reference folders (results/, plots/) and their guard
 *   kernels      the library's kernel registry as the commands see it (names, series)
 *   variants     the approximating kernels' flags (--window, --proj-rank, --features)
 *   position     the positional-encoding flags (--positions, --relative, ...)
 *   layer_flags  the layer flags of `block` and `model`
 *   models       the table of published Transformers (--model)
 *   pass         forward, backward and train calls of a kernel: cost and timing
 *   stats        spreads, log-log fits with bootstrap intervals, crossings, speed-ups
 *   memory       the peak-resident-memory probe (/proc/self)
 *   timer        the one timer: a body timed by a rule, interleaved with others
 *   machine      the machine's facts (cpu, cores, load, RAM) and the busy check
 *   progress     the progress line on stderr
 *   metadata     the `#` header of a results file: command, date, commit, machine
 *   rows         a results file's rows held in memory, by key
 *   lock         one linattn run per results folder
 *   record       the results files: opened, appended row by row, resumed, read back
 *   sweep        the flags every sweep shares, size lists, memory budgets
 *
 * Who calls whom (each uses only files of the lines above it: no cycles):
 *   cli, guard, lock, memory, rows,
 *   stats                               nothing of the harness
 *   timer                               memory, stats
 *   machine, pass, progress             timer
 *   metadata                            machine, memory
 *   record                              metadata, rows, lock, machine, guard
 *   arrays, layout, kernels, models,
 *   outputs, textout                    cli
 *   inputs                              arrays, cli, layout
 *   layer_flags                         cli, kernels
 *   position, variants                  arrays, cli
 *   sweep                               cli, inputs, machine (and timer's timer_rule)
 */
#ifndef LA_HARNESS_H
#define LA_HARNESS_H
#endif
