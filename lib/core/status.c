/* status.c — la_strerror, from the one list in linattn.h. */
#include "linattn.h"

const char *la_strerror(la_status status)
{
    switch (status) {
#define LA_STATUS_CASE(name, msg)                                                                  \
    case name: return msg;
        LA_STATUS_LIST(LA_STATUS_CASE)
#undef LA_STATUS_CASE
    }
    return "unknown status";
}
