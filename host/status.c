/* Status names and error records (pbd.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "pbd.h"

static const char *const status_strings[] = {
#define PBD_X_STRING(name, msg) msg,
    PBD_STATUS_LIST(PBD_X_STRING)
#undef PBD_X_STRING
};

const char *pbd_status_string(pbd_status status)
{
    if ((int)status < 0 || status >= PBD_STATUS_COUNT)
        return "unknown status";
    return status_strings[status];
}

pbd_status pbd_error_set(pbd_error *err, pbd_status status, const char *fmt, ...)
{
    if (!err)
        return status;
    if (status != PBD_ERR_BUILD) { /* a log belongs to a build failure only */
        free(err->log);
        err->log = NULL;
    }
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return status;
}

void pbd_error_clear(pbd_error *err)
{
    if (!err)
        return;
    free(err->log);
    err->log = NULL;
    err->status = PBD_OK;
    err->message[0] = '\0';
}
