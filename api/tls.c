/* The TLS certificate and key files (see tls.h). */
#include "tls.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Read the PEM file at path (what: "certificate" or "key", for messages) into a new
 * NUL-terminated buffer that must hold `marker`. Returns it, or NULL after logging why. */
static char *read_pem(const char *path, const char *what, const char *marker)
{
    FILE *f = fopen(path, "rbe");
    if (!f) {
        log_error("cannot read the TLS %s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(TLS_PEM_MAX + 1);
    size_t n = buf ? fread(buf, 1, TLS_PEM_MAX + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf) {
        log_error("out of memory reading the TLS %s %s", what, path);
        return NULL;
    }
    const char *why = NULL;
    if (bad)
        why = "read error";
    else if (n > TLS_PEM_MAX)
        why = "larger than 1 MiB";
    else if (memchr(buf, '\0', n))
        why = "not a PEM file (binary data; DER is not supported)";
    if (!why) {
        buf[n] = '\0';
        if (!strstr(buf, marker))
            why = "not a PEM file of the right kind";
    }
    if (why) {
        log_error("cannot use the TLS %s %s: %s (expected \"%s\")", what, path, why, marker);
        explicit_bzero(buf, n);
        free(buf);
        return NULL;
    }
    return buf;
}

int tls_load(const char *cert_path, const char *key_path, struct tls_pem *out)
{
    out->cert = out->key = NULL;
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        log_error("--tls-cert given but this libmicrohttpd was built without TLS support");
        return -1;
    }
    out->cert = read_pem(cert_path, "certificate", "-----BEGIN CERTIFICATE-----");
    if (out->cert)
        out->key = read_pem(key_path, "key", "PRIVATE KEY-----");
    if (!out->key) {
        tls_clear(out);
        return -1;
    }
    return 0;
}

void tls_clear(struct tls_pem *p)
{
    if (!p)
        return;
    if (p->key)
        explicit_bzero(p->key, strlen(p->key));
    free(p->key);
    free(p->cert);
    p->cert = p->key = NULL;
}
