Y luo bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea
Y secis que secis.
Y sea seas.
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y b
Y bea bea, y seas.
Y sea seas.
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y be
Y Tisuo, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea, y Jisea
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y
Y Tisis.
Y seas.
Y seas.
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea,
Y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo,
Y seas.
Y Tisis, y bea, y Jisis, y bea, y Jisis, y bea, y Jisis, y bea, y Jisis, y bea, y Jisis, y bea, y Jisis, y bea, y Ji
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y be
Y seas.
Y Tisis.
Y Tisuis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisi
Y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisi
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y be
Y seas.
Y Jisis.
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y
Y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y
Y secis, y secis, y secis, y secis, y secis, y secis, y secis, y secis, y secis, y secis, y secis, y sec
Y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Ti
Y Tisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jis
Y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y
Y Toisuo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo,
Y secis.
Y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y
Y Tisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y 
Y secis.
Y seas.
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y be
Y Tisisuis.
Y Tisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y J
Y seas.
Y Tisis.
Y Juo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y b
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea,
Y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo,
Y Jisis.
Y Jiso, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y 
Y seas.
Y Jisis.
Y Tisuis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jisis, y Jis
Y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y 
Y buo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y becuo, y bec
Y Tisuis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y
Y Tois hijos de los becis, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Juo, y Ju
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea,
Y buo bea, y beas.
Y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y b
Y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y b
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea,
Y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y b
Y Juo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo,
Y sea seas.
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y
Y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo,
Y Toisuo, y Juo, y Toisuo, y Juo, y Toisuo, y Juo, y Toisuo, y Juo, y Toisuo, y Juo, y Toisuo, y Juo, y Toisuo, y Juo, y Toisuo, y Juo, y Toisuo, y Juo,
Y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Ti
Y secis que secis.
Y Jisis.
Y buo bea, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y 
Y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y
Y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y secuo, y sec
Y sea sea, y seas.
Y Tisisuis.
Y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo
Y luo bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea
Y Tisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y Jisuo, y bea, y 
Y Jisis.
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y b
Y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y 
Y Jisuo, y bea, y Jisea, y bea, y Jisea, y bea, y Jisea, y bea, y Jisea, y bea, y Jisea, y bea, y Jisea, y bea, y Jisea, y bea, y Jisea, y bea, y Jisea, y be
Y secis.
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y be
Y Jisuis, y Jiser, y Jisis, y Jiser, y Jisis, y Jiser, y Jisis, y Jiser, y Jisis, y Jiser, y Jisis, y Jiser, y Jisis, y Jiser, y Jisis, y Jiser, y Jisis, y Jiser, y Jisis, y J
Y sea seres.
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea,
Y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Ti
Y Tisisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y
Y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y
Y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis,
Y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y Tisis, y 
Y Jaa bea, y beas.
Y buo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y b
Y Juisuo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo,
Y Juo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo,
Y Jisuo, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y bea, y be
Y seres.
Y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y Tisuo, y
Y Tisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisuo, y Jisu
Y Tisuo, y buo, y Jisuo, y buo, y Jisuo, y buo, y Jisuo, y buo, y Jisuo, y buo, y Jisuo, y buo, y Jisuo, y bu
Y Toisuo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y b
Y buo bea, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo, y buo
