export const hello = 'pkt';
