import Foundation

/// The plain C libcurl multi client of `rouse-bench send --versus-floor`: compiled by the bench with `cc` against
/// Debian's libcurl, so the curl engine is compared with libcurl itself and not with another wrapper.
///
/// Hand-written C (no library does this): it keeps `concurrency` easy handles in flight over one multiplexed
/// HTTP/2 connection (`CURLPIPE_MULTIPLEX`, `CURLOPT_PIPEWAIT`), reuses each handle for the next token as soon as
/// its transfer ends, and prints `done ok` (transfers finished, of which status 200).
enum CurlMultiProgram {
    static let source = #"""
        #include <curl/curl.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>

        static size_t discard(char *p, size_t s, size_t n, void *u) { (void)p; (void)u; return s * n; }

        static char *slurp(const char *path, size_t *length) {
            FILE *f = fopen(path, "rb");
            if (!f) { perror(path); exit(66); }
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            fseek(f, 0, SEEK_SET);
            char *data = malloc((size_t)n + 1);
            if (fread(data, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(66); }
            data[n] = 0;
            fclose(f);
            *length = (size_t)n;
            return data;
        }

        int main(int argc, char **argv) {
            if (argc != 7) {
                fprintf(stderr, "usage: curl-multi BASE-URL TOKENS-FILE PAYLOAD-FILE CONCURRENCY CA-FILE HEADERS-FILE\n");
                return 64;
            }
            size_t tokensLength, payloadLength, headersLength;
            char *tokensText = slurp(argv[2], &tokensLength);
            char *payload = slurp(argv[3], &payloadLength);
            char *headersText = slurp(argv[6], &headersLength);
            size_t count = 0, capacity = 1024;
            char **tokens = malloc(capacity * sizeof(char *));
            for (char *line = strtok(tokensText, "\n"); line; line = strtok(NULL, "\n")) {
                if (count == capacity) { capacity *= 2; tokens = realloc(tokens, capacity * sizeof(char *)); }
                tokens[count++] = line;
            }
            struct curl_slist *headers = NULL;
            for (char *line = strtok(headersText, "\n"); line; line = strtok(NULL, "\n")) {
                headers = curl_slist_append(headers, line);
            }
            int concurrency = atoi(argv[4]);
            if (concurrency < 1) concurrency = 1;
            curl_global_init(CURL_GLOBAL_DEFAULT);
            CURLM *multi = curl_multi_init();
            curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
            curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
            char url[512];
            size_t next = 0, done = 0, ok = 0;
            for (int i = 0; i < concurrency && next < count; i++) {
                CURL *easy = curl_easy_init();
                curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
                curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
                curl_easy_setopt(easy, CURLOPT_POSTFIELDS, payload);
                curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)payloadLength);
                curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
                curl_easy_setopt(easy, CURLOPT_CAINFO, argv[5]);
                curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
                snprintf(url, sizeof url, "%s%s", argv[1], tokens[next++]);
                curl_easy_setopt(easy, CURLOPT_URL, url);
                curl_multi_add_handle(multi, easy);
            }
            while (done < count) {
                int running = 0;
                if (curl_multi_perform(multi, &running) != CURLM_OK) return 70;
                CURLMsg *message;
                int left;
                while ((message = curl_multi_info_read(multi, &left))) {
                    if (message->msg != CURLMSG_DONE) continue;
                    CURL *easy = message->easy_handle;
                    long status = 0;
                    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
                    if (message->data.result == CURLE_OK && status == 200) ok++;
                    done++;
                    curl_multi_remove_handle(multi, easy);
                    if (next < count) {
                        snprintf(url, sizeof url, "%s%s", argv[1], tokens[next++]);
                        curl_easy_setopt(easy, CURLOPT_URL, url);
                        curl_multi_add_handle(multi, easy);
                    } else {
                        curl_easy_cleanup(easy);
                    }
                }
                if (done < count) curl_multi_poll(multi, NULL, 0, 1000, NULL);
            }
            printf("%zu %zu\n", done, ok);
            return ok == count ? 0 : 1;
        }
        """#

    /// Writes the source into `directory` and compiles it; returns the executable's path.
    static func build(in directory: String) throws -> String {
        let sourcePath = directory + "/curl-multi.c"
        let binary = directory + "/curl-multi"
        try source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        let cc = try Bench.tool("/usr/bin/cc")
        let result = try SendBench.runProcess(
            cc, ["-O2", "-o", binary, sourcePath, "-I/usr/include/x86_64-linux-gnu", "-lcurl"])
        guard result.status == 0 else {
            throw Bench.Failure(
                description: "cc curl-multi.c failed (libcurl4-openssl-dev installed?): \(result.output)")
        }
        return binary
    }
}
