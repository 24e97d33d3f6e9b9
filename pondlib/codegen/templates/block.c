## One operation of the float32 step (one module) in its own scope: $title names it, $body is its C.
{ /* $title */
    $body
}
