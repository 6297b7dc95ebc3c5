/* Prints the router's table, one "METHOD PATTERN" line per route, so that check_routes.py can
 * compare it with the paths and methods of openapi.yaml (ctest openapi.routes). */
#include <stdio.h>

#include "router.h"

int main(void)
{
    router_print(stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}
