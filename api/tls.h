/* The TLS certificate and key for libmicrohttpd's HTTPS (GnuTLS): read once at start-up from
 * --tls-cert and --tls-key, checked to be PEM of the right kind, handed to the daemon as
 * MHD_OPTION_HTTPS_MEM_CERT / _KEY. Whether GnuTLS accepts them (a valid certificate, a key
 * that matches it) is known only when the daemon starts. */
#ifndef JOBQ_TLS_H
#define JOBQ_TLS_H

/* TLS 1.2 and 1.3 only, GnuTLS's normal cipher choice otherwise. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* A certificate chain or key file may be at most this large. */
#define TLS_PEM_MAX (1024 * 1024)

struct tls_pem {
    char *cert; /* PEM text, NUL-terminated */
    char *key;
};

/* Read cert_path and key_path into out. Returns 0, or -1 after logging why (unreadable, over
 * TLS_PEM_MAX, binary, no "-----BEGIN CERTIFICATE-----" or "PRIVATE KEY-----" marker; this
 * libmicrohttpd without TLS) with out left empty. The caller releases out with tls_clear(). */
int tls_load(const char *cert_path, const char *key_path, struct tls_pem *out);

/* Wipe the key, free both texts and empty p. Accepts NULL and an empty p. */
void tls_clear(struct tls_pem *p);

#endif
