module appenv

go 1.26
