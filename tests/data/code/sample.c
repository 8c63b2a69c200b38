/* A fixture for C. */
#include <stdio.h>

#define MAX 10
#define SQUARE(x) ((x) * (x))

struct point {
    int x;
    int y;
};

typedef struct point point_t;

enum color { RED, GREEN };

static int counter = 0;

/* Adds two numbers. */
int add(int a, int b) {
    return a + b;
}

static const char *name_of(enum color c) {
    return c == RED ? "red" : "green";
}

int main(void) {
    printf("%d\n", add(1, SQUARE(2)));
    return 0;
}
