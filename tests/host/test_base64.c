/*
 * Base64 (runtime/core/base64.h): RFC 4648's test vectors both ways, a
 * round trip of every byte value at every length modulo 3, and malformed
 * input (length, characters, misplaced padding) as errors naming the place.
 */
#include "data_util.h"

#include "base64.h"

static void rfc4648_vectors(void **state)
{
    (void)state;
    const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char *s;
        assert_ok(cf_base64_encode(plain[i], strlen(plain[i]), &s));
        assert_string_equal(s, coded[i]);
        free(s);
        unsigned char *b;
        size_t n;
        assert_ok(cf_base64_decode(coded[i], "x", &b, &n));
        assert_int_equal(n, strlen(plain[i]));
        assert_memory_equal(b, plain[i], n);
        free(b);
    }
}

static void round_trip(void **state)
{
    (void)state;
    unsigned char data[258];
    for (int i = 0; i < 258; i++) data[i] = (unsigned char)(255 - i % 256);
    for (size_t len = 256; len <= 258; len++) {
        char *s;
        unsigned char *b;
        size_t n;
        assert_ok(cf_base64_encode(data, len, &s));
        assert_ok(cf_base64_decode(s, "x", &b, &n));
        assert_int_equal(n, len);
        assert_memory_equal(b, data, len);
        free(s);
        free(b);
    }
}

static void malformed(void **state)
{
    (void)state;
    unsigned char *b = (unsigned char *)1;
    size_t n;
    assert_error(cf_base64_decode("Zm9", "the model", &b, &n), CLFORMER_ERR_FORMAT, "the model",
                 "multiple of 4");
    assert_null(b);
    assert_error(cf_base64_decode("Zm9v Zg=", "m", &b, &n), CLFORMER_ERR_FORMAT,
                 "character 5");
    assert_error(cf_base64_decode("Zg==Zm9v", "m", &b, &n), CLFORMER_ERR_FORMAT, "character");
    assert_error(cf_base64_decode("Z===", "m", &b, &n), CLFORMER_ERR_FORMAT, "character 2");
    assert_error(cf_base64_decode("Zm-v", "m", &b, &n), CLFORMER_ERR_FORMAT, "'-'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc4648_vectors),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(malformed),
    };
    return cmocka_run_group_tests_name("base64", tests, NULL, NULL);
}
