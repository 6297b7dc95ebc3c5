#include "store.h"

const char *store_result_name(enum store_result r)
{
    switch (r) {
    case STORE_OK:
        return "ok";
    case STORE_EXISTS:
        return "exists";
    case STORE_NOT_FOUND:
        return "not found";
    case STORE_LEASE_LOST:
        return "lease lost";
    case STORE_CONFLICT:
        return "conflict";
    case STORE_BUSY:
        return "busy";
    case STORE_UNAVAILABLE:
        return "unavailable";
    case STORE_ERROR:
        return "error";
    }
    return "unknown";
}
