## A temporary of one step of at most LOCAL_MAX values, declared in the step function rather than placed in the
## arena: the loops over it have one iteration and vanish, and the compiler keeps it in a register.
$ctype $name[$count]; /* a value of this step only (a register once compiled) */
