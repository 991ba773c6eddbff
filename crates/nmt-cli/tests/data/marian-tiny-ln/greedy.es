Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne,
Y oor, y onne, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y o
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oone, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one
Y oone, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna,
Y oor, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y o
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os ol os o
Y oone, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y on
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oone, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol onne, y ol 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oona, y ol onna, y ol onna, y ol onna, y ol onna, y ol onna, y ol onna, y ol onna, y ol onna, y ol onna, y ol 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y ol ol, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol 
Y oone, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y 
Y oone, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oona, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oon
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y on
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y o
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oon
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y
Y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oon
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oor, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y on
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oona, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y o
Y oone, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oon
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oone, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y 
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onn
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y on
Y oone, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne, y oorne,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y on
Y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone, y ono, y oone,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y o
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oon
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oono, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y
Y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oon
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y o
Y el oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one, y one
Y oone, y oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos oos
Y oone, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor, y oor
Y oone, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol ona, y ol 
Y oone, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y onne, y on
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oon
Y onna, y onna, y onna, y onna, y onna, y onna, y onna, y onna, y on
Y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y oona, y
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y 
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone,
Y oone, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oon
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y o
Y oone, y onna, y oone, y onna, y oone, y onna, y oone, y onna, y oone, y onna, y oone, y onna, y oone, y onn
Y oone, y ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol ol 
Y oone, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one, y ol one
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y
Y el oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oo
Y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono, y oono
Y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone, y oone
